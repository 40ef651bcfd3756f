# runtime/gpu/embed_ptx.cmake — writes PTX text (IN) as a C++ string constant NAME into OUT (cmake -P).
file(READ ${IN} text)
file(WRITE ${OUT} "// Generated from ${IN} by runtime/gpu/embed_ptx.cmake; do not edit.\n"
                  "static const char ${NAME}[] = R\"dsv41ptx(${text})dsv41ptx\";\n")
