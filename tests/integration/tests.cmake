# SPDX-License-Identifier: MIT
# Integration tier (included from tests/CMakeLists.txt).
# Parameterised tests are ctest entries of one binary each:
#   integration.<test>.<design>.<params>

function(sstm_int_exe target)
  cmake_parse_arguments(A "STRESS" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${target} ${A_SOURCES})
  if(A_LIBS)
    target_link_libraries(${target} PRIVATE sstm_testcommon ${A_LIBS})
  else()
    target_link_libraries(${target} PRIVATE sstm_testcommon schedstm)
  endif()
  set_property(GLOBAL APPEND PROPERTY SSTM_TEST_TARGETS ${target})
  if(A_STRESS)
    set_property(GLOBAL APPEND PROPERTY SSTM_STRESS_TARGETS ${target})
  endif()
endfunction()

set(D ${CMAKE_CURRENT_SOURCE_DIR}/integration)
sstm_int_exe(itest_bank STRESS SOURCES ${D}/bank.c)
sstm_int_exe(itest_opacity STRESS SOURCES ${D}/opacity.c)
sstm_int_exe(itest_irrevocable STRESS SOURCES ${D}/irrevocable.c)
sstm_int_exe(itest_escalated_undo STRESS SOURCES ${D}/escalated_undo.c)
sstm_int_exe(itest_remote_abort STRESS SOURCES ${D}/remote_abort.c)
sstm_int_exe(itest_free_traversal STRESS SOURCES ${D}/free_traversal.c)
sstm_int_exe(itest_lanes STRESS SOURCES ${D}/lanes.c)
sstm_int_exe(itest_privatize STRESS SOURCES ${D}/privatize.c)
sstm_int_exe(itest_stdio STRESS SOURCES ${D}/stdio.c)
sstm_int_exe(itest_paused_holders STRESS SOURCES ${D}/paused_holders.c)
sstm_int_exe(itest_mesh STRESS SOURCES ${D}/mesh.c)
sstm_int_exe(itest_mesh_inline STRESS SOURCES ${D}/mesh.c)
sstm_int_exe(itest_syscalls SOURCES ${D}/syscalls.c ${CMAKE_CURRENT_SOURCE_DIR}/common/malloc_count.c
             ${CMAKE_CURRENT_SOURCE_DIR}/common/lock_count.c)
# bank and opacity again through the inline read fast path
sstm_int_exe(itest_bank_inline STRESS SOURCES ${D}/bank.c)
sstm_inline_barriers(itest_bank_inline)
sstm_int_exe(itest_opacity_inline STRESS SOURCES ${D}/opacity.c)
sstm_inline_barriers(itest_opacity_inline)
sstm_inline_barriers(itest_mesh_inline)
sstm_int_exe(itest_syscalls_inline SOURCES ${D}/syscalls.c ${CMAKE_CURRENT_SOURCE_DIR}/common/malloc_count.c
             ${CMAKE_CURRENT_SOURCE_DIR}/common/lock_count.c)
target_include_directories(itest_syscalls_inline PRIVATE ${PROJECT_SOURCE_DIR}/src)
sstm_inline_barriers(itest_syscalls_inline)
if(SCHEDSTM_RANDOM_DELAY)
  target_compile_definitions(itest_syscalls_inline PRIVATE SSTM_TEST_RANDOM_DELAY)
  target_compile_definitions(itest_syscalls PRIVATE SSTM_TEST_RANDOM_DELAY)
endif()

# The STAMP adapter (bench/stamp) through a STAMP-style program of ours, with
# the barriers inline (as bench/stamp/build.sh builds STAMP) and as calls.
foreach(v stamp_adapter stamp_adapter_calls)
  sstm_int_exe(itest_${v} SOURCES ${D}/stamp_adapter.c ${PROJECT_SOURCE_DIR}/bench/stamp/stm.c)
  target_include_directories(itest_${v} PRIVATE ${PROJECT_SOURCE_DIR}/bench/stamp)
endforeach()
sstm_inline_barriers(itest_stamp_adapter)
foreach(v stamp_adapter stamp_adapter_calls)
  foreach(d etl ctl)
    foreach(p suicide adaptive ser-block)
      foreach(n 1 4)
        sstm_add_test(NAME integration.${v}.${d}.${p}.${n} LABELS integration TIMEOUT 60
                      COMMAND itest_${v} -t ${n} -n 2000
                      ENV SCHEDSTM_DESIGN=${d} SCHEDSTM_CM=${p})
      endforeach()
    endforeach()
  endforeach()
endforeach()

# STAMP through gcc -fgnu-tm (bench/stamp/tm_itm.h) without STAMP: compiled
# as bench/stamp/build.sh's itm variant compiles STAMP (tm_itm.h
# force-included; stamp_itm/ holds stand-ins for STAMP's tm.h and thread.h),
# linked with libschedstm-itm. GCC only, not with the sanitizers (as
# test_itm).
if(SCHEDSTM_HAVE_ITM AND CMAKE_C_COMPILER_ID STREQUAL "GNU" AND NOT SCHEDSTM_SANITIZE)
  sstm_int_exe(itest_stamp_itm SOURCES ${D}/stamp_itm.c ${PROJECT_SOURCE_DIR}/bench/stamp/stm_itm.c
               LIBS schedstm_itm)
  target_include_directories(itest_stamp_itm PRIVATE ${D}/stamp_itm ${PROJECT_SOURCE_DIR}/bench/stamp)
  # only the program: the adapter's stm_itm.c is plain C, as build.sh compiles it
  set_source_files_properties(${D}/stamp_itm.c PROPERTIES COMPILE_OPTIONS
    "${SSTM_GNU_TM_COPTS};-Wno-clobbered;-include;${PROJECT_SOURCE_DIR}/bench/stamp/tm_itm.h")
  foreach(d etl ctl)
    foreach(n 1 4)
      sstm_add_test(NAME integration.stamp_itm.${d}.${n} LABELS integration TIMEOUT 60
                    COMMAND itest_stamp_itm -t ${n} -n 2000 ENV SCHEDSTM_DESIGN=${d})
    endforeach()
    sstm_add_test(NAME integration.stamp_itm.${d}.nopriv.4 LABELS integration TIMEOUT 60
                  COMMAND itest_stamp_itm -t 4 -n 2000
                  ENV SCHEDSTM_DESIGN=${d} SCHEDSTM_ITM_PRIVATIZATION=0)
  endforeach()
endif()

set(SSTM_STRESS_LABELS "integration;stress")
# A yada-like mesh of cells and neighbour lists (STAMP's yada failed its
# sharerPtr assertion under ser-yield and ser-block on a loaded host):
# replacements that free cells and list nodes, read their own writes, and
# check the structure inside every transaction, with more threads than
# CPUs, through the call and the inline barriers.
# STAMP builds with the inline barriers and ETL: that pair, and the calls
# with CTL.
foreach(vd mesh_inline.etl mesh.ctl)
  string(REPLACE "." ";" vdl ${vd})
  list(GET vdl 0 v)
  list(GET vdl 1 d)
  foreach(p ser-yield ser-block)
    sstm_add_test(NAME integration.${vd}.${p}.32 LABELS ${SSTM_STRESS_LABELS} TIMEOUT 120
                  COMMAND itest_${v} ${d} ${p} 32 --scaled-ops 300)
  endforeach()
endforeach()
# The built-in contention managers (src/cm/registry.c): integration.bank.*.all
# must find and run each of them, the cm_* entries below run each by name.
set(SSTM_CM_BASE suicide backoff yield ser-spin ser-yield ser-block softser os_prio timestamp adaptive)
string(REPLACE ";" "," SSTM_CM_BASE_CSV "${SSTM_CM_BASE}")

# Paused lock holders ((9) in docs/design/core.md): 64 threads, 2 run
# tokens, transfers suspended mid-way, under every policy (before (9), no
# commit at all under suicide, backoff, ext; waits on the suspended holders
# under ser-*); CTL locks at commit, so a suspended attempt holds nothing
# there: one entry. The stress entries race resumes against take-overs
# (as many tokens as threads) and run in the TSan build too.
foreach(p ${SSTM_CM_BASE} ext)
  sstm_add_test(NAME integration.paused_holders.etl.${p}.64.2 LABELS integration
                TIMEOUT 120 COMMAND itest_paused_holders etl ${p} 64 2)
endforeach()
sstm_add_test(NAME integration.paused_holders.ctl.suicide.64.2 LABELS integration
              TIMEOUT 120 COMMAND itest_paused_holders ctl suicide 64 2)
foreach(p suicide ser-block)
  foreach(tk 2 8)
    sstm_add_test(NAME integration.paused_holders.etl.${p}.8.${tk} LABELS ${SSTM_STRESS_LABELS}
                  TIMEOUT 120 COMMAND itest_paused_holders etl ${p} 8 ${tk} --ops 200)
  endforeach()
endforeach()

foreach(d etl ctl)
  # bank: design x policy x threads
  foreach(p suicide backoff)
    foreach(n 1 2 8 32)
      sstm_add_test(NAME integration.bank.${d}.${p}.${n} LABELS ${SSTM_STRESS_LABELS}
                    TIMEOUT 120 COMMAND itest_bank ${d} ${p} ${n})
    endforeach()
  endforeach()
  # every registered policy, from sstm_cm_list() (catches policies added
  # later; blocking ones matter with more threads than CPUs), each of
  # SSTM_CM_BASE required among them
  foreach(n 4 32)
    sstm_add_test(NAME integration.bank.${d}.all.${n} LABELS ${SSTM_STRESS_LABELS}
                  TIMEOUT 240
                  COMMAND itest_bank ${d} all ${n} --expect-policies ${SSTM_CM_BASE_CSV})
  endforeach()
  foreach(n 2 8)
    sstm_add_test(NAME integration.opacity.${d}.${n} LABELS ${SSTM_STRESS_LABELS}
                  TIMEOUT 120 COMMAND itest_opacity ${d} ${n})
  endforeach()
  sstm_add_test(NAME integration.irrevocable.${d} LABELS ${SSTM_STRESS_LABELS}
                TIMEOUT 120 COMMAND itest_irrevocable ${d})
  sstm_add_test(NAME integration.escalated_undo.${d} LABELS ${SSTM_STRESS_LABELS}
                TIMEOUT 120 COMMAND itest_escalated_undo ${d})
  foreach(p suicide backoff)
    sstm_add_test(NAME integration.remote_abort.${d}.${p}.4 LABELS ${SSTM_STRESS_LABELS}
                  TIMEOUT 120 COMMAND itest_remote_abort ${d} 4 --policy ${p})
  endforeach()
  sstm_add_test(NAME integration.free_traversal.${d}.4 LABELS ${SSTM_STRESS_LABELS}
                TIMEOUT 120 COMMAND itest_free_traversal ${d} 4)
  foreach(m u8 u16 bytes)
    sstm_add_test(NAME integration.lanes.${d}.${m} LABELS ${SSTM_STRESS_LABELS}
                  TIMEOUT 120 COMMAND itest_lanes ${d} ${m})
  endforeach()
  # privatization barrier: membarrier and seq_cst-fence begin protocols
  # (each run checks that sstm_describe names the protocol it is for:
  # membarrier where the kernel has it, the fence fallback when forced)
  foreach(n 4 8)
    sstm_add_test(NAME integration.privatize.${d}.${n} LABELS ${SSTM_STRESS_LABELS}
                  TIMEOUT 120 COMMAND itest_privatize ${d} ${n} --expect-fence kernel)
  endforeach()
  sstm_add_test(NAME integration.privatize.${d}.4.nomembarrier LABELS ${SSTM_STRESS_LABELS}
                TIMEOUT 120 COMMAND itest_privatize ${d} 4 --expect-fence fence
                ENV SCHEDSTM_NO_MEMBARRIER=1)
  # Negative control: without the barrier the same run must see both races
  # (it is racy by design, so never under TSan). It runs rounds until it
  # has seen them; the watchdog fails it if it never does.
  if(NOT SCHEDSTM_SANITIZE MATCHES "thread")
    sstm_add_test(NAME integration.privatize.${d}.4.no_quiesce_control LABELS integration
                  TIMEOUT 120 COMMAND itest_privatize ${d} 4 --no-quiesce --expect-races)
  endif()
  sstm_add_test(NAME integration.syscalls.${d} LABELS integration
                TIMEOUT 60 COMMAND itest_syscalls ${d})
  sstm_add_test(NAME integration.syscalls_inline.${d} LABELS integration
                TIMEOUT 60 COMMAND itest_syscalls_inline ${d})
  sstm_add_test(NAME integration.bank_inline.${d}.suicide.8 LABELS ${SSTM_STRESS_LABELS}
                TIMEOUT 120 COMMAND itest_bank_inline ${d} suicide 8)
  sstm_add_test(NAME integration.opacity_inline.${d}.8 LABELS ${SSTM_STRESS_LABELS}
                TIMEOUT 120 COMMAND itest_opacity_inline ${d} 8)
  # The transactional stdio: random transactions on one shared stream
  # against a sequential model in their serial order; a kill -9 before and
  # after commits.
  foreach(n 1 4 8)
    sstm_add_test(NAME integration.stdio.${d}.model.${n} LABELS ${SSTM_STRESS_LABELS}
                  TIMEOUT 120 COMMAND itest_stdio ${d} model ${n})
  endforeach()
  # The same under each buffering of sstm_setvbuf.
  sstm_add_test(NAME integration.stdio.${d}.model_vbuf.4 LABELS ${SSTM_STRESS_LABELS}
                TIMEOUT 120 COMMAND itest_stdio ${d} model_vbuf 4)
  sstm_add_test(NAME integration.stdio.${d}.append.4 LABELS ${SSTM_STRESS_LABELS}
                TIMEOUT 120 COMMAND itest_stdio ${d} append 4)
  sstm_add_test(NAME integration.stdio.${d}.crash LABELS integration
                TIMEOUT 60 COMMAND itest_stdio ${d} crash 1)
  sstm_add_test(NAME integration.stdio.${d}.mixed.4 LABELS ${SSTM_STRESS_LABELS}
                TIMEOUT 120 COMMAND itest_stdio ${d} mixed 4)
  sstm_add_test(NAME integration.stdio.${d}.mixed_read.4 LABELS ${SSTM_STRESS_LABELS}
                TIMEOUT 120 COMMAND itest_stdio ${d} mixed_read 4)
endforeach()
# Encounter-time locking with cfg.read_past off (every lock goes to the
# policy) and all (update attempts pass running writers' locks too, and
# validation accepts them); the default passes them in read-only attempts.
foreach(rp off all)
  sstm_add_test(NAME integration.bank.etl.suicide.8.read_past_${rp} LABELS ${SSTM_STRESS_LABELS}
                TIMEOUT 120 COMMAND itest_bank etl suicide 8 ENV SSTM_TEST_READ_PAST=${rp})
  sstm_add_test(NAME integration.bank.etl.ser-block.32.read_past_${rp}
                LABELS ${SSTM_STRESS_LABELS} TIMEOUT 120
                COMMAND itest_bank etl ser-block 32 ENV SSTM_TEST_READ_PAST=${rp})
  sstm_add_test(NAME integration.opacity.etl.8.read_past_${rp} LABELS ${SSTM_STRESS_LABELS}
                TIMEOUT 120 COMMAND itest_opacity etl 8 ENV SSTM_TEST_READ_PAST=${rp})
endforeach()
# Read sets in declared read-only first attempts (cfg.ro_log auto and on;
# the default is off): with read_past=ro they pass running writers and
# validate past them.
foreach(rl auto on)
  sstm_add_test(NAME integration.bank.etl.suicide.8.ro_log_${rl} LABELS ${SSTM_STRESS_LABELS}
                TIMEOUT 120 COMMAND itest_bank etl suicide 8 ENV SSTM_TEST_RO_LOG=${rl})
  foreach(d etl ctl)
    sstm_add_test(NAME integration.opacity.${d}.8.ro_log_${rl} LABELS ${SSTM_STRESS_LABELS}
                  TIMEOUT 120 COMMAND itest_opacity ${d} 8 ENV SSTM_TEST_RO_LOG=${rl})
  endforeach()
endforeach()

# intset: the bench/ds structures (bench/ is configured after tests/, so
# test for its sources, not its targets).
if(SCHEDSTM_BUILD_BENCH AND EXISTS ${PROJECT_SOURCE_DIR}/bench/ds/intset.h
   AND EXISTS ${PROJECT_SOURCE_DIR}/bench/CMakeLists.txt)
  sstm_int_exe(itest_intset STRESS SOURCES ${D}/intset.c LIBS bench_ds_schedstm)
  foreach(d etl ctl)
    foreach(k ll sl rb hs rb-aw sl-aw)
      sstm_add_test(NAME integration.intset.${k}.${d}.4 LABELS ${SSTM_STRESS_LABELS}
                    TIMEOUT 120 COMMAND itest_intset ${k} ${d} 4)
    endforeach()
  endforeach()
  foreach(rp off all)
    sstm_add_test(NAME integration.intset.rb.etl.4.read_past_${rp} LABELS ${SSTM_STRESS_LABELS}
                  TIMEOUT 120 COMMAND itest_intset rb etl 4 ENV SSTM_TEST_READ_PAST=${rp})
  endforeach()
  foreach(rl auto on)
    sstm_add_test(NAME integration.intset.ll.etl.4.ro_log_${rl} LABELS ${SSTM_STRESS_LABELS}
                  TIMEOUT 120 COMMAND itest_intset ll etl 4 ENV SSTM_TEST_RO_LOG=${rl})
  endforeach()
else()
  message(STATUS "tests: bench/ds not built: intset integration tests skipped")
endif()

# tpcc: TPC-C on the STM (bench/tpcc, docs/tpcc.md): mixed runs under several
# designs and policies followed by the consistency checks, the checks
# failing on deliberately corrupted databases, bad inputs refused; and the
# driver tpcc-schedstm's command line (bad arguments, --check, --corrupt).
if(SCHEDSTM_BUILD_BENCH AND EXISTS ${PROJECT_SOURCE_DIR}/bench/tpcc/tpcc.h
   AND EXISTS ${PROJECT_SOURCE_DIR}/bench/CMakeLists.txt)
  sstm_int_exe(itest_tpcc STRESS SOURCES ${D}/tpcc.c LIBS bench_tpcc)
  foreach(dp etl.suicide etl.ser-block etl.timestamp etl.adaptive ctl.suicide ctl.backoff)
    string(REPLACE "." ";" dpl ${dp})
    list(GET dpl 0 d)
    list(GET dpl 1 p)
    sstm_add_test(NAME integration.tpcc.${d}.${p}.4 LABELS ${SSTM_STRESS_LABELS}
                  TIMEOUT 120 COMMAND itest_tpcc run ${d} ${p} 4)
  endforeach()
  sstm_add_test(NAME integration.tpcc.etl.suicide.1 LABELS ${SSTM_STRESS_LABELS}
                TIMEOUT 60 COMMAND itest_tpcc run etl suicide 1)
  foreach(m corrupt inputs)
    sstm_add_test(NAME integration.tpcc.${m} LABELS integration TIMEOUT 60
                  COMMAND itest_tpcc ${m})
  endforeach()
  # The driver: a checked run, a corrupted one that --check must fail
  # (status 1, the condition named), bad arguments (status 2, a message).
  # sstm_tpcc_cli(NAME status regex args...)
  # (add_test directly: a list passed on to sstm_add_test would split the
  # shell command at its semicolons)
  function(sstm_tpcc_cli name status regex)
    math(EXPR t "60 * ${SSTM_TIMEOUT_FACTOR}")
    add_test(NAME integration.tpcc_cli.${name}
             COMMAND sh -c "out=$(\"$0\" \"$@\" 2>&1); rc=$?; echo \"$out\"; [ $rc -eq ${status} ] || { echo \"exit status $rc, expected ${status}\"; exit 1; }; echo \"$out\" | grep -q -e '${regex}' || { echo 'output does not match: ${regex}'; exit 1; }"
                     $<TARGET_FILE:tpcc-schedstm> ${ARGN})
    set_tests_properties(integration.tpcc_cli.${name} PROPERTIES
                         TIMEOUT ${t} LABELS integration ENVIRONMENT "${SSTM_SAN_ENV}")
  endfunction()
  sstm_tpcc_cli(check 0 "\"check\":\"ok\"" --small -n 2 -N 400 --check --cm ser-block)
  sstm_tpcc_cli(corrupt 1 "consistency check failed.*condition 3:" --small -N 200
                --corrupt new-order-gap)
  sstm_tpcc_cli(help 0 "^usage: tpcc-schedstm " --help)
  sstm_tpcc_cli(unknown_option 2 "^usage: tpcc-schedstm " --no-such-option)
  sstm_tpcc_cli(bad_threads 2 "option -n/--threads: .x. is not an integer" -n x)
  sstm_tpcc_cli(bad_mix 2 "option -m/--mix: .1,2,3. needs 5 comma-separated values" -m 1,2,3)
  sstm_tpcc_cli(zero_mix 2 "every weight is 0" -m 0,0,0,0,0)
  sstm_tpcc_cli(bad_districts 2 "option --districts" --districts 11)
  sstm_tpcc_cli(bad_orders 2 "scale: orders 61 not in 1..60" --small --orders 61)
  sstm_tpcc_cli(bad_corrupt 2 "unknown corruption .nope." --corrupt nope)
  sstm_tpcc_cli(stray_argument 2 "unexpected argument .extra." --small extra)
  # Torture: every base policy through 30 s of eight terminals on the
  # specification's scale (one warehouse, ten districts), checked after;
  # the integration run with 32 threads and many more transactions.
  if(SCHEDSTM_TORTURE)
    foreach(p IN LISTS SSTM_CM_BASE)
      sstm_add_test(NAME torture.tpcc.${p}.8 LABELS torture TIMEOUT 600
                    COMMAND tpcc-schedstm -n 8 -d 30000 --check -C ${p})
    endforeach()
    foreach(d etl ctl)
      sstm_add_test(NAME torture.tpcc.run.${d}.32 LABELS torture TIMEOUT 1800
                    COMMAND itest_tpcc run ${d} ser-block 32 --ops 2000000)
    endforeach()
  endif()
  # On the preemptive executor: the consistency checks after a mixed run
  # with preemption on (and, as the control, off).
  # Linked to the shared library (the executor's signal mode needs the
  # library's code in a range of its own), with bench/tpcc's sources.
  set(tpcc_src ${PROJECT_SOURCE_DIR}/bench/tpcc)
  sstm_int_exe(itest_tpcc_exec STRESS SOURCES ${D}/tpcc_exec.c ${tpcc_src}/tpcc_db.c
               ${tpcc_src}/tpcc_tx.c ${tpcc_src}/tpcc_check.c)
  target_include_directories(itest_tpcc_exec PRIVATE ${tpcc_src} ${PROJECT_SOURCE_DIR}/bench/common)
  foreach(m none signal poll)
    sstm_add_test(NAME integration.tpcc_exec.${m} LABELS ${SSTM_STRESS_LABELS} TIMEOUT 120
                  COMMAND itest_tpcc_exec ${m})
  endforeach()
  sstm_add_test(NAME integration.tpcc_exec.signal.ser-block LABELS ${SSTM_STRESS_LABELS}
                TIMEOUT 120 COMMAND itest_tpcc_exec signal ser-block)
else()
  message(STATUS "tests: bench/tpcc not built: tpcc integration tests skipped")
endif()

# The request server (bench/server, docs/protocol.md) through server_fuzz.py
# against a running sstm-server: the protocol fuzzed (random, truncated and
# oversized frames, slow clients, disconnects mid-request), SIGTERM's drain,
# TPC-C parameters at the database's bounds, a TPC-C mixed run with
# preemption on followed by the consistency check;
# and both programs' command lines. The same conditions as
# bench/server/CMakeLists.txt's for building them.
set(sstm_loadgen_built OFF)
set(sstm_server_built OFF)
if(SCHEDSTM_BUILD_BENCH AND EXISTS ${PROJECT_SOURCE_DIR}/bench/server/loadgen.c
   AND EXISTS ${PROJECT_SOURCE_DIR}/bench/tpcc/tpcc.h)
  set(sstm_loadgen_built ON)
  find_package(PkgConfig)
  if(PkgConfig_FOUND)
    pkg_check_modules(SSTM_LIBUV QUIET libuv)
    set(sstm_server_built ${SSTM_LIBUV_FOUND})
  endif()
endif()
find_package(Python3 COMPONENTS Interpreter)
set(sstm_server_progs "")
if(sstm_loadgen_built)
  list(APPEND sstm_server_progs sstm-loadgen)
endif()
if(sstm_server_built AND Python3_Interpreter_FOUND)
  list(APPEND sstm_server_progs sstm-server)
  set(fuzz ${D}/server_fuzz.py)
  sstm_add_test(NAME integration.server.fuzz LABELS integration stress TIMEOUT 120
                COMMAND ${Python3_EXECUTABLE} ${fuzz} fuzz $<TARGET_FILE:sstm-server>)
  sstm_add_test(NAME integration.server.drain LABELS integration stress TIMEOUT 60
                COMMAND ${Python3_EXECUTABLE} ${fuzz} drain $<TARGET_FILE:sstm-server>)
  # TPC-C parameters at the database's bounds: run, or refused (PROTO_E_PARAMS).
  sstm_add_test(NAME integration.server.tpcc_params LABELS integration TIMEOUT 60
                COMMAND ${Python3_EXECUTABLE} ${fuzz} tpcc-params $<TARGET_FILE:sstm-server>)
  # Without a sanitizer the run must have preempted (with TSan the
  # executor has no redirect and may serve every request in turn).
  set(expect "")
  if(NOT SCHEDSTM_SANITIZE)
    set(expect --expect-preemptions)
  endif()
  sstm_add_test(NAME integration.server.tpcc_preempt_check LABELS integration stress
                TIMEOUT 120 COMMAND ${Python3_EXECUTABLE} ${fuzz} tpcc
                $<TARGET_FILE:sstm-server> $<TARGET_FILE:sstm-loadgen> ${expect})
  # The same with Table I's demands (--demand), C_max 1 and hand-over.
  sstm_add_test(NAME integration.server.tpcc_demand_handover_check LABELS integration stress
                TIMEOUT 120 COMMAND ${Python3_EXECUTABLE} ${fuzz} tpcc-demand
                $<TARGET_FILE:sstm-server> $<TARGET_FILE:sstm-loadgen> ${expect})
  # sstm-loadgen --window: never more than the window outstanding (a stand-in
  # server in the script answers only when told).
  sstm_add_test(NAME integration.server.loadgen_window LABELS integration TIMEOUT 60
                COMMAND ${Python3_EXECUTABLE} ${fuzz} window $<TARGET_FILE:sstm-loadgen>)
else()
  message(STATUS "tests: sstm-server not built: its tests skipped")
endif()
foreach(prog IN LISTS sstm_server_progs)
  add_test(NAME integration.server.${prog}-usage
           COMMAND sh -c "out=$(\"$0\" --help) || exit 1; echo \"$out\" | grep -q '^usage: ${prog} ' || exit 1; \"$0\" --no-such-option 2>/dev/null; [ $? -eq 2 ] || exit 1; err=$(\"$0\" --port x 2>&1); [ $? -eq 2 ] && echo \"$err\" | grep -q 'option -p/--port: .x. is not an integer'"
                   $<TARGET_FILE:${prog}>)
  set_tests_properties(integration.server.${prog}-usage PROPERTIES TIMEOUT 30
                       LABELS integration ENVIRONMENT "${SSTM_SAN_ENV}")
endforeach()

# Torture: long runs, only with -DSCHEDSTM_TORTURE=ON (see the `torture`
# target). Never part of the default ctest run.
if(SCHEDSTM_TORTURE)
  foreach(d etl ctl)
    sstm_add_test(NAME torture.irrevocable.${d} LABELS torture TIMEOUT 3600
                  COMMAND itest_irrevocable ${d} --runs 1000)
    sstm_add_test(NAME torture.escalated_undo.${d} LABELS torture TIMEOUT 3600
                  COMMAND itest_escalated_undo ${d} --runs 1000)
    foreach(p suicide backoff)
      sstm_add_test(NAME torture.bank.${d}.${p}.32 LABELS torture TIMEOUT 600
                    COMMAND itest_bank ${d} ${p} 32 --seconds 180)
    endforeach()
    sstm_add_test(NAME torture.opacity.${d}.8 LABELS torture TIMEOUT 600
                  COMMAND itest_opacity ${d} 8 --seconds 180)
    sstm_add_test(NAME torture.remote_abort.${d}.8 LABELS torture TIMEOUT 600
                  COMMAND itest_remote_abort ${d} 8 --ops 2000000)
    sstm_add_test(NAME torture.privatize.${d}.8 LABELS torture TIMEOUT 600
                  COMMAND itest_privatize ${d} 8 --rounds 5000)
  endforeach()
  foreach(rp off all)
    sstm_add_test(NAME torture.bank.etl.ser-block.32.read_past_${rp} LABELS torture TIMEOUT 600
                  COMMAND itest_bank etl ser-block 32 --seconds 180 ENV SSTM_TEST_READ_PAST=${rp})
    sstm_add_test(NAME torture.opacity.etl.8.read_past_${rp} LABELS torture TIMEOUT 600
                  COMMAND itest_opacity etl 8 --seconds 180 ENV SSTM_TEST_READ_PAST=${rp})
  endforeach()
  sstm_add_test(NAME torture.opacity.etl.8.ro_log_on LABELS torture TIMEOUT 600
                COMMAND itest_opacity etl 8 --seconds 180 ENV SSTM_TEST_RO_LOG=on)
  sstm_add_test(NAME torture.bank.etl.ser-block.32.ro_log_auto LABELS torture TIMEOUT 600
                COMMAND itest_bank etl ser-block 32 --seconds 180 ENV SSTM_TEST_RO_LOG=auto)
endif()

# statetab: tools/sstm-top reading the state table of a running workload.
if(TARGET sstm-top)
  sstm_int_exe(itest_statetab SOURCES ${D}/statetab.c)
  target_compile_definitions(itest_statetab PRIVATE SSTM_TOP_PATH="$<TARGET_FILE:sstm-top>")
  add_dependencies(itest_statetab sstm-top)
  foreach(d etl ctl)
    foreach(p suicide backoff policy ser_block softser os_prio adaptive)
      sstm_add_test(NAME integration.statetab.snapshot.${d}.${p} LABELS integration
                    TIMEOUT 60 COMMAND itest_statetab snapshot_${p} ENV SSTM_TEST_DESIGN=${d})
    endforeach()
  endforeach()
  foreach(t fresh_entries cancelled_transaction_ends sched_set_updates_the_entry uptime_and_free_slots no_table garbage permission fifo header_changed truncated_while_read
            control_bytes exited_process clean_stale shm_full fork_child live_view_follows_policy_line
            live_view_across_shutdown_and_reinit planted_names_do_not_stop_init
            exit_without_shutdown_removes_the_table table_resource_errors table_cannot_shrink
            cm_info_wait_is_bounded live_view_fits_the_width
            policy_wait_is_outside_the_attempt_and_retry_shows_its_counters
            an_abort_names_the_other_party_of_its_conflict
            long_policy_line_is_marked_cut executor_levels_in_the_table
            table_without_exec_area_old_version_and_bad_exec_area
            mapping_shows_each_threads_cpu policy_log_prints_each_change)
    sstm_add_test(NAME integration.statetab.${t} LABELS integration TIMEOUT 60
                  COMMAND itest_statetab ${t})
    # One at a time: clean_stale plants files at the names versions 1-3
    # used, which planted_names_do_not_stop_init plants too, and
    # cm_info_wait_is_bounded loads a CPU on purpose. A lock of one ctest
    # run only: the names that every process of the host shares (fifo's
    # file named like the table, clean_stale's /dev/shm) are kept private
    # to the test's process by the tests themselves (statetab.c), so that
    # two builds' suites may run at once.
    set_tests_properties(integration.statetab.${t} PROPERTIES RESOURCE_LOCK sstm_dev_shm_tables)
  endforeach()
endif()

# ---- contention managers -----------------------------------------------------
# Every policy and the ext combinations through the correctness harness, at
# 4 threads and 32 (oversubscribed: the regime these policies target). The
# bank runs the base policies in integration.bank.<d>.all.<n> (over
# sstm_cm_list); the combinations are added here. Small op counts: the
# whole set stays within about a minute at SSTM_TEST_SCALE=1. The TSan and
# random-delay builds (label stress) run the 4-thread entries: 32 threads
# spinning on 2 CPUs under TSan take minutes each.
# (SSTM_CM_BASE: the built-in policies, set above.)
# Every base policy with +ext ("ext" alone is suicide+ext).
set(SSTM_CM_COMBOS ext)
foreach(p IN LISTS SSTM_CM_BASE)
  if(NOT p STREQUAL "suicide")
    list(APPEND SSTM_CM_COMBOS ${p}+ext)
  endif()
endforeach()
set(SSTM_CM_KINDS ll sl rb hs)
foreach(d etl ctl)
  foreach(n 4 32)
    if(n EQUAL 4)
      set(labels ${SSTM_STRESS_LABELS})
    else()
      set(labels integration)
    endif()
    foreach(p IN LISTS SSTM_CM_COMBOS)
      sstm_add_test(NAME integration.cm_bank.${d}.${p}.${n} LABELS ${labels}
                    TIMEOUT 120 COMMAND itest_bank ${d} ${p} ${n} --scaled-ops 150000)
    endforeach()
    set(i 0)
    foreach(p IN LISTS SSTM_CM_BASE SSTM_CM_COMBOS)
      sstm_add_test(NAME integration.cm_opacity.${d}.${p}.${n} LABELS ${labels}
                    TIMEOUT 120 COMMAND itest_opacity ${d} ${n} --policy ${p} --scaled-ops 200000)
      if(TARGET itest_intset)
        # one structure per policy, rotating (all four over the policies)
        math(EXPR k "${i} % 4")
        list(GET SSTM_CM_KINDS ${k} kind)
        sstm_add_test(NAME integration.cm_intset.${kind}.${d}.${p}.${n} LABELS ${labels}
                      TIMEOUT 120
                      COMMAND itest_intset ${kind} ${d} ${n} --policy ${p} --scaled-ops 60000)
      endif()
      math(EXPR i "${i} + 1")
    endforeach()
  endforeach()
  # a commit with nobody waiting makes no system call, whatever the policy
  foreach(p ser-block softser os_prio timestamp adaptive ser-block+ext ext)
    sstm_add_test(NAME integration.cm_syscalls.${d}.${p} LABELS integration
                  TIMEOUT 60 COMMAND itest_syscalls ${d} --policy ${p})
  endforeach()
  # ... nor with the per-thread state table published (plain stores only)
  foreach(p suicide softser adaptive)
    sstm_add_test(NAME integration.cm_syscalls.${d}.${p}.state_table LABELS integration
                  TIMEOUT 60 COMMAND itest_syscalls ${d} --policy ${p} --state-table)
  endforeach()
endforeach()

# Torture (-DSCHEDSTM_TORTURE=ON, the `torture` target): every policy and
# every +ext form through longer bank and opacity runs at 32 and 8 threads,
# and through all four intset structures against the model, not only the
# one structure per policy of the default run.
if(SCHEDSTM_TORTURE)
  foreach(d etl ctl)
    foreach(p IN LISTS SSTM_CM_BASE SSTM_CM_COMBOS)
      sstm_add_test(NAME torture.cm_bank.${d}.${p}.32 LABELS torture TIMEOUT 600
                    COMMAND itest_bank ${d} ${p} 32 --seconds 15)
      sstm_add_test(NAME torture.cm_opacity.${d}.${p}.8 LABELS torture TIMEOUT 600
                    COMMAND itest_opacity ${d} 8 --policy ${p} --seconds 15)
      if(TARGET itest_intset)
        foreach(kind IN LISTS SSTM_CM_KINDS)
          sstm_add_test(NAME torture.cm_intset.${kind}.${d}.${p}.32 LABELS torture TIMEOUT 600
                        COMMAND itest_intset ${kind} ${d} 32 --policy ${p} --ops 10000000)
        endforeach()
      endif()
    endforeach()
  endforeach()
endif()

# Deadlock freedom of the waiting policies (64 threads, 3 hot accounts),
# livelock freedom of the priority policies, adaptive switching.
# STATIC: --unbounded lifts the ser-* wait bound (sstm__ser_wait_max_ns, a
# test seam in src/cm/common.h).
sstm_int_exe(itest_cm_deadlock STRESS SOURCES ${D}/cm_deadlock.c LIBS schedstm_static)
target_include_directories(itest_cm_deadlock PRIVATE ${PROJECT_SOURCE_DIR}/src)
sstm_int_exe(itest_cm_livelock STRESS SOURCES ${D}/cm_livelock.c)
sstm_int_exe(itest_cm_adaptive STRESS SOURCES ${D}/cm_adaptive.c)
foreach(d etl ctl)
  foreach(p ser-block ser-block+ext)
    sstm_add_test(NAME integration.cm_deadlock.${d}.${p}.64 LABELS ${SSTM_STRESS_LABELS}
                  TIMEOUT 120 COMMAND itest_cm_deadlock ${d} ${p} 64)
  endforeach()
  foreach(p ser-spin ser-yield softser) # spinning/retrying 64 threads: too slow under TSan
    sstm_add_test(NAME integration.cm_deadlock.${d}.${p}.64 LABELS integration
                  TIMEOUT 120 COMMAND itest_cm_deadlock ${d} ${p} 64)
  endforeach()
  # the same without the wait bound: a wait-for cycle would hang (watchdog),
  # and no wait may time out
  foreach(p ser-block ser-block+ext)
    sstm_add_test(NAME integration.cm_deadlock.${d}.${p}.64.unbounded
                  LABELS ${SSTM_STRESS_LABELS} TIMEOUT 120
                  COMMAND itest_cm_deadlock ${d} ${p} 64 --unbounded)
  endforeach()
  foreach(p ser-spin ser-yield) # integration only, as above
    sstm_add_test(NAME integration.cm_deadlock.${d}.${p}.64.unbounded LABELS integration
                  TIMEOUT 120 COMMAND itest_cm_deadlock ${d} ${p} 64 --unbounded)
  endforeach()
  foreach(p os_prio timestamp)
    sstm_add_test(NAME integration.cm_livelock.${d}.${p}.8 LABELS ${SSTM_STRESS_LABELS}
                  TIMEOUT 120 COMMAND itest_cm_livelock ${d} ${p} 8)
    sstm_add_test(NAME integration.cm_livelock.${d}.${p}.32 LABELS integration
                  TIMEOUT 120 COMMAND itest_cm_livelock ${d} ${p} 32)
    sstm_add_test(NAME integration.cm_livelock.${d}.${p}.8.escalate4
                  LABELS ${SSTM_STRESS_LABELS} TIMEOUT 120
                  COMMAND itest_cm_livelock ${d} ${p} 8 --expect-escalations
                  ENV SCHEDSTM_PRIO_ESCALATE=4)
  endforeach()
  foreach(p adaptive adaptive+ext)
    sstm_add_test(NAME integration.cm_adaptive.${d}.${p}.32 LABELS ${SSTM_STRESS_LABELS}
                  TIMEOUT 120 COMMAND itest_cm_adaptive ${d} 32 --policy ${p})
  endforeach()
  sstm_add_test(NAME integration.cm_adaptive.${d}.adaptive.32.nondet LABELS ${SSTM_STRESS_LABELS}
                TIMEOUT 120 COMMAND itest_cm_adaptive ${d} 32 --nondet)
endforeach()

# asan_user: user code with AddressSanitizer, the library without (so only
# in the build without sanitizers, and where the compiler has ASan).
if(NOT SCHEDSTM_SANITIZE)
  include(CheckCSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS -fsanitize=address)
  set(CMAKE_REQUIRED_LINK_OPTIONS -fsanitize=address)
  check_c_source_compiles("int main(void) { return 0; }" SSTM_HAVE_ASAN)
  unset(CMAKE_REQUIRED_FLAGS)
  unset(CMAKE_REQUIRED_LINK_OPTIONS)
  if(SSTM_HAVE_ASAN)
    add_executable(itest_asan_user ${D}/asan_user.c)
    target_compile_options(itest_asan_user PRIVATE -fsanitize=address -fno-omit-frame-pointer)
    target_link_options(itest_asan_user PRIVATE -fsanitize=address)
    target_link_libraries(itest_asan_user PRIVATE schedstm)
    set_property(GLOBAL APPEND PROPERTY SSTM_TEST_TARGETS itest_asan_user)
    sstm_add_test(NAME integration.asan_user LABELS integration TIMEOUT 60
                  COMMAND itest_asan_user)
  endif()
endif()

# The executor's preemption (include/schedstm/exec.h), once per mode of
# telling a worker to preempt.
sstm_int_exe(itest_exec_preempt STRESS SOURCES ${D}/exec_preempt.c)
foreach(c preempts bank bank_tick engine_storm engine_storm_adaptive standing
          standing_after_last_access nudge region_misuse c_max_promotes_to_the_top
          deep_stack errno_kept errno_moves errno_kept_polled)
  foreach(m signal poll)
    sstm_add_test(NAME integration.exec_preempt.${c}.${m} LABELS ${SSTM_STRESS_LABELS} TIMEOUT 180
                  COMMAND itest_exec_preempt ${c} ENV SCHEDSTM_EXEC_PREEMPT=${m})
  endforeach()
endforeach()
# Ticks without preemption: its own mode, whatever SCHEDSTM_EXEC_PREEMPT says.
sstm_add_test(NAME integration.exec_preempt.ticks_never_switch LABELS ${SSTM_STRESS_LABELS}
              TIMEOUT 180 COMMAND itest_exec_preempt ticks_never_switch)
# Takeover against hand-over of a paused lock holder, under both ways of
# preempting: of a lower priority (paused_conflict_*; INHERIT's two outcomes
# there depend on run times: unit.internal_exec_inherit_run), and of a
# higher one, promoted while paused (promoted_*, INHERIT's as hand-over's).
foreach(c paused_conflict_takeover paused_conflict_handover promoted_handover promoted_takeover
          promoted_inherit)
  foreach(m signal poll)
    sstm_add_test(NAME integration.exec_preempt.${c}.${m} LABELS ${SSTM_STRESS_LABELS} TIMEOUT 180
                  COMMAND itest_exec_preempt ${c} ENV SCHEDSTM_EXEC_PREEMPT=${m})
  endforeach()
endforeach()

# map_affinity: the threads of a multi-threaded run are where the thread
# mapping decided, read back from /proc and from the affinity log.
sstm_int_exe(itest_map_affinity SOURCES ${D}/map_affinity.c)
foreach(d etl ctl)
  foreach(s compact scatter round-robin stmap)
    sstm_add_test(NAME integration.map_affinity.${d}.${s} LABELS integration TIMEOUT 60
                  COMMAND itest_map_affinity ${d} ${s})
  endforeach()
endforeach()
