# kvindexer_warnings(<target>): the project's warning set. Generated code
# (kvindexer_proto) does not use it.
function(kvindexer_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wshadow -Wnon-virtual-dtor -Woverloaded-virtual)
  if(KVINDEXER_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
