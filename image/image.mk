# SPDX-License-Identifier: Apache-2.0
# image/: the image store (build with mmdebstrap, import with skopeo and umoci, ls, rm, and
# image_open for sessions), one library that the CLI and the unit tests link.
IMAGE_SRCS := $(wildcard image/*.c)
IMAGE_LIB  := $(OBJ)/libimage.a

$(IMAGE_LIB): $(IMAGE_SRCS:%.c=$(OBJ)/%.o)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^
