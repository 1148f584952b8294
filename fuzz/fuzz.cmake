# libFuzzer harnesses (included from the top-level CMakeLists.txt when AGEFENCE_FUZZ=ON; built in
# build-fuzz/ by scripts/fuzz.sh). The same sources, with fuzz/replay_main.c instead of libFuzzer,
# replay the committed corpus and regressions in the normal build (tests/CMakeLists.txt).
foreach(harness config log log_raw)
  add_executable(fuzz_${harness} fuzz/fuzz_${harness}.c fuzz/fuzz_common.c)
  target_link_libraries(fuzz_${harness} PRIVATE agefence_core)
  target_compile_options(fuzz_${harness} PRIVATE ${AF_WARN})
  target_link_options(fuzz_${harness} PRIVATE -fsanitize=fuzzer)
endforeach()
