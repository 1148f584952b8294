# agefence-report tests (included from tests/CMakeLists.txt).
#   test_report              unit  statistics, JSON, figures of a synthetic log, --check on
#                                  seeded inconsistencies, partial logs (cmocka)
#   report_run_small         mpi   fixture: agefence on fixtures/small.ini (3 ranks)
#   report_run_faultfree     mpi   fixture: agefence on fixtures/faultfree.ini (2 ranks)
#   report_run_domains       mpi   fixture: the default fleet, 900 steps, with whole-device and
#                                  whole-node losses (2 devices a node; 2 ranks) and job-level
#                                  interruptions, drawn and one scripted
#   report_{text,json,verify,plots}_{small,faultfree}
#                            mpi   agefence-report on those logs: summary, --check and
#                                  --compare with itself (ratios exactly 1); --json parsed by
#                                  Python; every figure recomputed with numpy; --plots
#   report_plots_no_python   mpi   --plots without a usable Python: one line, report, exit 0
#   report_bad_input         mpi   missing, foreign, truncated, future-schema and partial logs
#   report_killed            mpi   agefence killed with SIGKILL mid-run: --check says exactly so
#   report_ensemble          mpi   agefence-report DIR: an ensemble of members (ensemble_report.sh)
# Tests that need Python (json), h5py/numpy (verify) or matplotlib (plots) fail without them:
# scripts/setup.sh installs them, and a missing one is a broken environment, not a skip.
add_executable(test_report test_report.c)
target_link_libraries(test_report PRIVATE agefence_core PkgConfig::CMOCKA)
target_compile_options(test_report PRIVATE ${AF_WARN})
add_test(NAME test_report COMMAND test_report)
set_tests_properties(test_report PROPERTIES LABELS unit TIMEOUT 120 ENVIRONMENT "${AF_MPI_ENV}")

# Seeds a defect into a copy of a log (tests/report.sh).
add_executable(report_mutate report_mutate.c)
target_link_libraries(report_mutate PRIVATE agefence_core)
target_compile_options(report_mutate PRIVATE ${AF_WARN})

set(AF_REPORT_DIR ${CMAKE_CURRENT_BINARY_DIR}/runs/report)
file(MAKE_DIRECTORY ${AF_REPORT_DIR})
set(AF_REPORT_SH ${CMAKE_CURRENT_SOURCE_DIR}/report.sh)
set(AF_REPORT_FIX ${CMAKE_CURRENT_SOURCE_DIR}/fixtures)

# The logs, made by the suite's own runs (--force: each run of the suite replaces them rather than
# keep the last ones beside them as NAME.~N~).
add_test(NAME report_run_small
         COMMAND ${AF_MPIEXEC} -n 3 $<TARGET_FILE:agefence> run -q --force
                 -c ${AF_REPORT_FIX}/small.ini -o ${AF_REPORT_DIR}/small.h5)
add_test(NAME report_run_faultfree
         COMMAND ${AF_MPIEXEC} -n 2 $<TARGET_FILE:agefence> run -q --force
                 -c ${AF_REPORT_FIX}/faultfree.ini -o ${AF_REPORT_DIR}/faultfree.h5)
add_test(NAME report_run_domains
         COMMAND ${AF_MPIEXEC} -n 2 $<TARGET_FILE:agefence> run -q --force
                 --set scenario.steps=900 --set scenario.devices_per_node=2
                 --set aging.device_rate_per_hour=3e-6 --set aging.node_rate_per_hour=1e-6
                 --set interrupt.software_per_hour=1e-4 --set interrupt.network_per_node_hour=1e-5
                 --set interrupt.nccl_watchdog_per_hour=2e-5
                 --set interrupt.sdc_per_device_hour=5e-6 --set event.2.step=40
                 --set event.2.action=interrupt --set event.2.cause=nic --set event.2.node=1
                 -o ${AF_REPORT_DIR}/domains.h5)
set_tests_properties(report_run_small PROPERTIES FIXTURES_SETUP af_report_small)
set_tests_properties(report_run_faultfree PROPERTIES FIXTURES_SETUP af_report_faultfree)
set_tests_properties(report_run_domains PROPERTIES FIXTURES_SETUP af_report_domains)
set_tests_properties(report_run_small report_run_faultfree report_run_domains PROPERTIES LABELS
                     mpi TIMEOUT 300 ENVIRONMENT "${AF_MPI_ENV}")

set(AF_REPORT_TESTS)
foreach(log small faultfree)
  foreach(what text json verify plots)
    add_test(NAME report_${what}_${log}
             COMMAND bash ${AF_REPORT_SH} ${what} $<TARGET_FILE:agefence-report>
                     $<TARGET_FILE:report_mutate> ${AF_REPORT_DIR}/${log}.h5
                     ${AF_REPORT_DIR}/${what}_${log})
    set_tests_properties(report_${what}_${log} PROPERTIES FIXTURES_REQUIRED af_report_${log})
    list(APPEND AF_REPORT_TESTS report_${what}_${log})
  endforeach()
endforeach()
# The domains' log: the summary and --compare, the JSON, and numpy's recount of every figure
# (the interruptions by node and device among them).
foreach(what text json verify)
  add_test(NAME report_${what}_domains
           COMMAND bash ${AF_REPORT_SH} ${what} $<TARGET_FILE:agefence-report>
                   $<TARGET_FILE:report_mutate> ${AF_REPORT_DIR}/domains.h5
                   ${AF_REPORT_DIR}/${what}_domains)
  set_tests_properties(report_${what}_domains PROPERTIES FIXTURES_REQUIRED af_report_domains)
  list(APPEND AF_REPORT_TESTS report_${what}_domains)
endforeach()
foreach(what plots_no_python bad_input)
  add_test(NAME report_${what}
           COMMAND bash ${AF_REPORT_SH} ${what} $<TARGET_FILE:agefence-report>
                   $<TARGET_FILE:report_mutate> ${AF_REPORT_DIR}/small.h5
                   ${AF_REPORT_DIR}/${what} ${AF_REPORT_FIX}/report)
  set_tests_properties(report_${what} PROPERTIES FIXTURES_REQUIRED af_report_small)
  list(APPEND AF_REPORT_TESTS report_${what})
endforeach()
# A run killed with SIGKILL: the log up to the last flush, and --check says just that.
add_test(NAME report_killed
         COMMAND bash ${AF_REPORT_SH} killed $<TARGET_FILE:agefence-report>
                 $<TARGET_FILE:report_mutate> ${AF_REPORT_DIR}/killed.h5 ${AF_REPORT_DIR}/killed
                 "$<TARGET_FILE:agefence> ${AF_MPIEXEC}")
list(APPEND AF_REPORT_TESTS report_killed)
set_tests_properties(${AF_REPORT_TESTS} PROPERTIES LABELS mpi TIMEOUT 180 SKIP_RETURN_CODE 77
                     ENVIRONMENT "${AF_MPI_ENV}")

# agefence-report DIR: an ensemble's members gathered (tests/ensemble_report.sh): figures of the
# members' own reports, the same on 1 and 2 ranks and in any order, a grid, --plots, members
# that did not finish, one member, bad input (a copied member, the odd scenario named).
add_test(NAME report_ensemble
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/ensemble_report.sh $<TARGET_FILE:agefence>
                 $<TARGET_FILE:agefence-report> ${AF_MPIEXEC} ${AF_REPORT_DIR}/ensemble
                 ${PROJECT_SOURCE_DIR} $<TARGET_FILE:report_mutate>)
set_tests_properties(report_ensemble PROPERTIES LABELS mpi TIMEOUT 600 ENVIRONMENT "${AF_MPI_ENV}")
