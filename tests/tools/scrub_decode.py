# SPDX-License-Identifier: Apache-2.0
# tests/tools/scrub_decode.py: decodes stdin as the named escape form with Python's own
# decoders (html.unescape) or the form's plain rule, so a test knows that what an upstream
# sent really is the secret in that form. Usage: python3 scrub_decode.py FORM < text
import codecs
import html
import re
import sys

FORM = sys.argv[1].removesuffix('all')
T = sys.stdin.read()
RULES = {
    'bspunct': lambda v: re.sub(r'\\(.)', r'\1', v),
    'octal': lambda v: re.sub(r'\\([0-7]{1,3})', lambda m: chr(int(m.group(1), 8)), v),
    'ubrace': lambda v: re.sub(r'\\u\{([0-9a-fA-F]{1,6})\}', lambda m: chr(int(m.group(1), 16)), v),
    'pctu': lambda v: re.sub(r'%u([0-9a-fA-F]{4})', lambda m: chr(int(m.group(1), 16)), v),
    # CSS: up to six hex digits, then one optional white space character.
    'css': lambda v: re.sub(r'\\([0-9a-fA-F]{1,6})[ \t\n]?', lambda m: chr(int(m.group(1), 16)), v),
    'css6': lambda v: re.sub(r'\\([0-9a-fA-F]{1,6})[ \t\n]?', lambda m: chr(int(m.group(1), 16)), v),
    'bigu': lambda v: re.sub(r'\\U([0-9a-fA-F]{8})', lambda m: chr(int(m.group(1), 16)), v),
    # Java's source (JLS 3.3): a backslash, one or more 'u's, four hex digits (where no Java
    # compiler is installed).
    'javau': lambda v: re.sub(r'\\u+([0-9a-fA-F]{4})', lambda m: chr(int(m.group(1), 16)), v),
    # Python's own: \N{NAME} (and every other escape of a string literal).
    'pyname': lambda v: codecs.decode(v.encode(), 'unicode_escape'),
    'pynamelc': lambda v: codecs.decode(v.encode(), 'unicode_escape'),
}
sys.stdout.write(RULES[FORM](T) if FORM in RULES else html.unescape(T))
