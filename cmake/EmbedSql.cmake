# embed_sql(OUT_VAR DIR NAME): turns DIR/*.sql into a generated C++ source that
# defines `clk::sql::NAME()`, the migrations in file-name order, so the binary
# never reads SQL from disk at run time.
function(embed_sql out_var dir name)
  set(generated ${CMAKE_BINARY_DIR}/generated/sql/${name}.cpp)
  file(GLOB sql_files CONFIGURE_DEPENDS ${dir}/*.sql)
  list(SORT sql_files)
  # A ';' would split the command line: pass the list '|'-separated.
  string(REPLACE ";" "|" file_list "${sql_files}")
  add_custom_command(
    OUTPUT ${generated}
    COMMAND ${CMAKE_COMMAND} -DNAME=${name} -DOUT=${generated} "-DFILES=${file_list}"
            -P ${CMAKE_SOURCE_DIR}/cmake/EmbedSqlScript.cmake
    DEPENDS ${sql_files} ${CMAKE_SOURCE_DIR}/cmake/EmbedSqlScript.cmake
    COMMENT "Embedding ${name}"
    VERBATIM)
  set(${out_var} ${generated} PARENT_SCOPE)
endfunction()
