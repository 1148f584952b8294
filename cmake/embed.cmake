# Turns a text file into a C string constant: cmake -DIN=... -DOUT=... -DNAME=... -P embed.cmake
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
file(WRITE "${OUT}" "/* Generated from ${NAME_SRC} by cmake/embed.cmake: do not edit. */\nconst char ${NAME}[] = {${body}0x00};\n")
