# SPDX-License-Identifier: MIT
# The long ctest entries, each with a COST: ctest -j starts the entries of
# higher cost first. In a fresh build directory ctest has no timings of its
# own yet (Testing/Temporary/CTestCostData.txt) and starts entries in the
# order they were added, so a long integration or bench entry added late
# (bench-alloc-sweep is among the last) ran alone at the end of a part while
# the other CPU had nothing left to do. The costs are rough seconds (the
# larger of a normal and a random-delay run on a loaded host); only their
# order matters, and an entry not listed keeps cost 0. Applied per directory
# (a test's properties can only be set where it was added):
# tests/CMakeLists.txt, tests/internal and bench call sstm_apply_costs()
# after adding their tests.
# Set the COST of the listed entries that the calling directory added (the
# list is inside the function: a variable would be the defining directory's).
function(sstm_apply_costs)
  set(SSTM_TEST_COSTS
    integration.bank.etl.all.4=50 integration.bank.etl.all.32=44
    unit.harness.python.1=40 unit.harness.python.2=40 unit.harness.python.3=40
    unit.harness.python.4=40
    integration.irrevocable.etl=39 integration.opacity.etl.2=39 integration.irrevocable.ctl=25
    bench-alloc-sweep=22
    integration.bank.etl.backoff.1=20 integration.bank.etl.backoff.2=20
    integration.bank.etl.backoff.32=19 integration.bank.etl.backoff.8=14
    integration.exec_preempt.engine_storm.signal=19 integration.exec_preempt.engine_storm.poll=13
    integration.privatize.ctl.4.nomembarrier=15
    integration.bank.ctl.all.4=15 integration.bank.ctl.all.32=14
    integration.exec_preempt.bank_tick.signal=15 integration.exec_preempt.bank_tick.poll=15
    integration.exec_preempt.bank.poll=13 integration.exec_preempt.bank.signal=13
    integration.bank.ctl.backoff.8=13 integration.bank.ctl.backoff.32=9
    integration.remote_abort.etl.backoff.4=11 integration.remote_abort.ctl.suicide.4=9
    integration.remote_abort.ctl.backoff.4=9 integration.remote_abort.etl.suicide.4=6
    integration.cm_livelock.ctl.os_prio.32=10 integration.cm_livelock.ctl.os_prio.8=9
    integration.cm_livelock.ctl.timestamp.8.escalate4=8 integration.cm_livelock.ctl.timestamp.32=8
    integration.cm_livelock.etl.timestamp.32=8 integration.cm_livelock.etl.os_prio.32=8
    integration.cm_livelock.etl.timestamp.8.escalate4=6 integration.cm_livelock.etl.os_prio.8=6
    integration.privatize.etl.4=10 integration.privatize.ctl.8=9 integration.privatize.etl.8=7
    integration.cm_deadlock.etl.ser-spin.64.unbounded=10 integration.cm_deadlock.etl.ser-spin.64=7
    integration.cm_deadlock.etl.ser-yield.64.unbounded=6
    unit.internal_ctx.redirect_whose_fn_switches_contexts_keeps_every_register=6
    unit.meta.apidoc=8 unit.meta.every_case_registered=6
    integration.cm_adaptive.ctl.adaptive+ext.32=7
    integration.server.tpcc_preempt_check=6 integration.server.tpcc_demand_handover_check=6
    integration.bank.etl.suicide.32=6 integration.bank.etl.suicide.8.read_past_all=6
    integration.bank.ctl.backoff.1=5
    unit.internal_cm_wait.wait_never_misses_the_end.etl=5
    unit.internal_cm_wait.wait_never_misses_the_end.ctl=5)
  foreach(e IN LISTS SSTM_TEST_COSTS)
    string(REGEX REPLACE "=[0-9]+$" "" name "${e}")
    string(REGEX REPLACE "^.*=" "" cost "${e}")
    if(TEST ${name})
      set_tests_properties(${name} PROPERTIES COST ${cost})
    endif()
  endforeach()
endfunction()
