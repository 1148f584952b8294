# Provenance, installation and packaging tests (included from tests/CMakeLists.txt).
#   version       install  tests/version.sh: --version names this build's git revision; a
#                          `git archive` export builds as "<version> (no git)"
add_test(NAME version
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/version.sh $<TARGET_FILE:agefence>
                 ${PROJECT_SOURCE_DIR} ${PROJECT_VERSION} ${CMAKE_CURRENT_BINARY_DIR}/runs/version)
set_tests_properties(version PROPERTIES LABELS install TIMEOUT 300 SKIP_RETURN_CODE 77)
