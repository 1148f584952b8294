# agefence on Slurm and on several "nodes" (included from tests/CMakeLists.txt).
#   test_launch         label unit: sim/io/launch.c (launch checks, Slurm description) from the
#                       environment variables srun, sbatch and mpirun set
#   mpirun_hostfile     label mpi: `mpirun --hostfile` with a hostfile of localhost slots=N,
#                       checked through its log (tests/hostfile.sh)
#   slurm_cluster       label slurm: a real single-node Slurm (munged, slurmctld, slurmd) started
#                       in a scratch folder; jobs from configs/slurm/agefence.sbatch, a time
#                       limit, and srun launches that must be refused (tests/slurm.sh). Needs
#                       root and installs Slurm and munge (scripts/setup.sh --slurm) when they
#                       are missing; SKIP (77) when not root.
add_executable(test_launch ${CMAKE_CURRENT_LIST_DIR}/test_launch.c)
target_link_libraries(test_launch PRIVATE agefence_core PkgConfig::CMOCKA)
target_compile_options(test_launch PRIVATE ${AF_WARN})
add_test(NAME test_launch COMMAND test_launch)
set_tests_properties(test_launch PROPERTIES LABELS unit TIMEOUT 120 ENVIRONMENT "${AF_MPI_ENV}")

# Open MPI's hostfile and slots (tests/hostfile.sh calls its mpirun directly).
if(AF_MPIEXEC_FLAVOUR STREQUAL "openmpi")
  add_test(NAME mpirun_hostfile
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/hostfile.sh $<TARGET_FILE:agefence>
                   $<TARGET_FILE:agefence-report> ${MPIEXEC_EXECUTABLE}
                   ${CMAKE_CURRENT_BINARY_DIR}/runs/hostfile ${CMAKE_CURRENT_LIST_DIR}/run_case.sh
                   ${CMAKE_CURRENT_LIST_DIR}/fixtures/small.ini 3)
  set_tests_properties(mpirun_hostfile PROPERTIES LABELS mpi TIMEOUT 300
                       ENVIRONMENT "${AF_MPI_ENV}")
endif()

# 45-80 s here (2 cores), most of it the time-limit jobs (Slurm's smallest limit is a minute)
# and sbatch --wait's polling; the first install of Slurm and munge adds about 20 s. RUN_SERIAL:
# its jobs oversubscribe the cores, which would disturb the timing of other tests.
add_test(NAME slurm_cluster
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/slurm.sh $<TARGET_FILE:agefence>
                 $<TARGET_FILE:agefence-report> ${PROJECT_SOURCE_DIR}
                 ${CMAKE_CURRENT_BINARY_DIR}/runs/slurm)
set_tests_properties(slurm_cluster PROPERTIES LABELS slurm TIMEOUT 900 SKIP_RETURN_CODE 77
                     RUN_SERIAL ON ENVIRONMENT "${AF_MPI_ENV}")
