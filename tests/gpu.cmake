# agefence GPU tests and the GPU kernel benchmark (included from tests/CMakeLists.txt).
#   test_backend          label unit: backend selection, runs everywhere (no GPU needed)
#   test_cuda             label gpu: the CUDA kernels against the CPU backend, bit for bit
#   test_cuda_nccl        label gpu: the NCCL fabric at one rank (mpiexec -n 1)
#   test_cuda_shared_gpu  label gpu: two ranks on one GPU must be refused (mpiexec -n 2)
#   test_cuda_fixtures    label unit: the lockstep fixtures' CPU halves, no GPU needed
#   run_cuda_graph        label gpu: a whole run with the step graph as a CUDA graph
#   run_cuda_share_np*    label gpu: 2-4 ranks sharing one GPU (backend.share_gpu = on, fabric
#                         mpi): cross-rank moves, MPI staging, the graph with the host all-reduce
#   bench_kernel_cuda     not a test: scripts/gpu-check.sh runs it (docs/GPU.md)
# GPU tests exit 77 (SKIP) where no GPU is visible or the build has no CUDA; CTest reports them
# as skipped, not passed.
add_executable(test_backend ${CMAKE_CURRENT_LIST_DIR}/test_backend.c)
target_link_libraries(test_backend PRIVATE agefence_core PkgConfig::CMOCKA)
target_compile_options(test_backend PRIVATE ${AF_WARN})
add_test(NAME test_backend COMMAND test_backend)
set_tests_properties(test_backend PROPERTIES LABELS unit TIMEOUT 120 ENVIRONMENT "${AF_MPI_ENV}")

add_executable(test_cuda ${CMAKE_CURRENT_LIST_DIR}/test_cuda.c)
target_link_libraries(test_cuda PRIVATE agefence_core PkgConfig::CMOCKA ${MATH_LIBRARY})
target_compile_options(test_cuda PRIVATE ${AF_WARN})
add_test(NAME test_cuda COMMAND test_cuda)
add_test(NAME test_cuda_nccl
         COMMAND ${AF_MPIEXEC} -n 1 $<TARGET_FILE:test_cuda> nccl)
add_test(NAME test_cuda_shared_gpu
         COMMAND ${AF_MPIEXEC} -n 2
                 $<TARGET_FILE:test_cuda> shared)
set_tests_properties(test_cuda test_cuda_nccl test_cuda_shared_gpu PROPERTIES
                     LABELS gpu TIMEOUT 300 SKIP_RETURN_CODE 77 ENVIRONMENT "${AF_MPI_ENV}")
# The same fixtures on the CPU backend alone, everywhere (CI included): a fixture that stops
# injecting, fencing or computing the NaNs its GPU comparison is about fails here.
add_test(NAME test_cuda_fixtures COMMAND test_cuda fixtures)
set_tests_properties(test_cuda_fixtures PROPERTIES LABELS unit TIMEOUT 120)

# A whole run on the GPU through the default scenario's 85% blackout, with the step graph:
# one instantiation, most steps as the graph, bitwise equal to the reference, nothing allocated
# after start-up (run_case.sh), SKIP where test_cuda finds no GPU.
add_test(NAME run_cuda_graph
         COMMAND bash -c "\"$1\" probe >/dev/null || exit $?; shift; exec bash \"$@\"" _
                 $<TARGET_FILE:test_cuda> ${AF_RUN_CASE} $<TARGET_FILE:agefence>
                 $<TARGET_FILE:agefence-report> ${AF_MPIEXEC}
                 ${CMAKE_CURRENT_BINARY_DIR}/runs/run_cuda_graph
                 check=/final@graph_instantiations=1 min=/final@graph_steps=1000
                 min=/final@max_blackout=0.85 -- --set backend.compute=cuda
                 --set backend.graph=on)
set_tests_properties(run_cuda_graph PROPERTIES LABELS gpu TIMEOUT 300 SKIP_RETURN_CODE 77
                     ENVIRONMENT "${AF_MPI_ENV}")

# Several ranks on one GPU (backend.share_gpu = on, fabric = mpi): the default scenario's
# cross-rank restores and drains through MPI staging, eager on 2 and 4 ranks and with the step
# graph (its host all-reduce) on 3, each bitwise equal to the reference with nothing allocated
# after start-up; SKIP where test_cuda finds no GPU.
foreach(np 2 3 4)
  set(graph off)
  set(graph_check "")
  if(np EQUAL 3)
    set(graph on)
    set(graph_check min=/final@graph_steps=1000)
  endif()
  add_test(NAME run_cuda_share_np${np}
           COMMAND bash -c "\"$1\" probe >/dev/null || exit $?; shift; exec bash \"$@\"" _
                   $<TARGET_FILE:test_cuda> ${AF_RUN_CASE} $<TARGET_FILE:agefence>
                   $<TARGET_FILE:agefence-report> ${AF_MPIEXEC}
                   ${CMAKE_CURRENT_BINARY_DIR}/runs/run_cuda_share_np${np} np=${np}
                   min=/final@max_blackout=0.85 min=/final@moves_restore_total=1 ${graph_check} --
                   --set backend.compute=cuda --set backend.fabric=mpi
                   --set backend.share_gpu=on --set backend.graph=${graph})
  set_tests_properties(run_cuda_share_np${np} PROPERTIES LABELS gpu TIMEOUT 300
                       SKIP_RETURN_CODE 77 ENVIRONMENT "${AF_MPI_ENV}")
endforeach()

if(AGEFENCE_HAVE_CUDA)
  add_executable(bench_kernel_cuda ${PROJECT_SOURCE_DIR}/bench/bench_kernel_cuda.cu)
  target_link_libraries(bench_kernel_cuda PRIVATE agefence_core)
  set_property(TARGET bench_kernel_cuda PROPERTY CUDA_ARCHITECTURES ${CMAKE_CUDA_ARCHITECTURES})
  target_compile_options(bench_kernel_cuda PRIVATE ${AF_CUDA_FLAGS})
endif()
