# cmake -DIN=file -DOUT=file.c -DSYMBOL=name -P embed_text.cmake
# Writes `const char name[] = {bytes..., 0};` so any text embeds verbatim.
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUT} "/* Generated from ${IN}; do not edit. */\nconst char ${SYMBOL}[] = {${bytes}0};\n")
