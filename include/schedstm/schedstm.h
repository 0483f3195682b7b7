/* schedstm: umbrella header. A scheduling-aware software transactional
 * memory for Linux. See docs/architecture.md. */
#ifndef SCHEDSTM_H
#define SCHEDSTM_H

#include <schedstm/common.h>
#include <schedstm/config.h>
#include <schedstm/thread.h>
#include <schedstm/tx.h>
#include <schedstm/alloc.h>
#include <schedstm/stats.h>
#include <schedstm/cm.h>
#include <schedstm/hooks.h>
#include <schedstm/sched.h>

#endif /* SCHEDSTM_H */
