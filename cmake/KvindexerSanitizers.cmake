# KVINDEXER_SANITIZE=address builds everything with ASan+UBSan;
# KVINDEXER_SANITIZE=thread with TSan. Applied globally so that static
# libraries, plugins and tests agree.
if(KVINDEXER_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(KVINDEXER_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT KVINDEXER_SANITIZE STREQUAL "")
  message(FATAL_ERROR
    "KVINDEXER_SANITIZE='${KVINDEXER_SANITIZE}': use '', 'address' or 'thread'")
endif()
