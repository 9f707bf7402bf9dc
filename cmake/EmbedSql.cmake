# embed_sql(OUT_VAR DIR NAME [HASH_NAME]): turns DIR/*.sql into a generated C++
# source that defines `clk::sql::NAME()`, the files in file-name order (and
# `clk::sql::HASH_NAME()`, the sha256 of their texts, if given), so the binary
# never reads SQL from disk at run time.
function(embed_sql out_var dir name)
  set(hash_name "${ARGV3}")
  set(generated ${CMAKE_BINARY_DIR}/generated/sql/${name}.cpp)
  file(GLOB sql_files CONFIGURE_DEPENDS ${dir}/*.sql)
  list(SORT sql_files)
  # A ';' would split the command line: pass the list '|'-separated.
  string(REPLACE ";" "|" file_list "${sql_files}")
  add_custom_command(
    OUTPUT ${generated}
    COMMAND ${CMAKE_COMMAND} -DNAME=${name} -DOUT=${generated} "-DFILES=${file_list}"
            "-DHASH_NAME=${hash_name}"
            -P ${CMAKE_SOURCE_DIR}/cmake/EmbedSqlScript.cmake
    DEPENDS ${sql_files} ${CMAKE_SOURCE_DIR}/cmake/EmbedSqlScript.cmake
    COMMENT "Embedding ${name}"
    VERBATIM)
  set(${out_var} ${generated} PARENT_SCOPE)
endfunction()
