/* Global hooks on thread and transaction events. */
#include "core/engine.h"

static struct {
  const sstm_hooks_t *h;
  void *arg;
} hooks[SSTM_MAX_HOOKS];

/* The table is changed only while no transaction runs (documented), under
 * reg_lock; nhooks is the fast-path test. */
SSTM_API int sstm_hooks_add(const sstm_hooks_t *h, void *arg) {
  if (h == NULL) {
    sstm__set_error("sstm_hooks_add: hooks is NULL");
    return SSTM_EINVAL;
  }
  pthread_mutex_lock(&sstm__g.reg_lock);
  int handle = SSTM_ELIMIT;
  for (int i = 0; i < SSTM_MAX_HOOKS; i++) {
    if (hooks[i].h == NULL) {
      hooks[i].h = h;
      hooks[i].arg = arg;
      handle = i;
      break;
    }
  }
  if (handle >= 0) atomic_fetch_add_explicit(&sstm__g.nhooks, 1, memory_order_release);
  pthread_mutex_unlock(&sstm__g.reg_lock);
  if (handle < 0) sstm__set_error("sstm_hooks_add: all %d hook slots are used", SSTM_MAX_HOOKS);
  return handle;
}

SSTM_API int sstm_hooks_remove(int handle) {
  if (handle < 0 || handle >= SSTM_MAX_HOOKS) {
    sstm__set_error("sstm_hooks_remove: handle %d out of range [0, %d)", handle, SSTM_MAX_HOOKS);
    return SSTM_EINVAL;
  }
  pthread_mutex_lock(&sstm__g.reg_lock);
  int rc = SSTM_EINVAL;
  if (hooks[handle].h != NULL) {
    hooks[handle].h = NULL;
    atomic_fetch_sub_explicit(&sstm__g.nhooks, 1, memory_order_release);
    rc = 0;
  }
  pthread_mutex_unlock(&sstm__g.reg_lock);
  return rc;
}

#define FOR_HOOKS(member, ...)                                                                     \
  for (int i = 0; i < SSTM_MAX_HOOKS; i++)                                                         \
    if (hooks[i].h && hooks[i].h->member) hooks[i].h->member(hooks[i].arg, ##__VA_ARGS__)

void sstm__hooks_thread_init(void) { FOR_HOOKS(thread_init); }
void sstm__hooks_thread_exit(void) { FOR_HOOKS(thread_exit); }
void sstm__hooks_begin(uint64_t txid) { FOR_HOOKS(tx_begin, txid); }
void sstm__hooks_commit(uint64_t txid) { FOR_HOOKS(tx_commit, txid); }
void sstm__hooks_abort(uint64_t txid, sstm_abort_reason_t r) { FOR_HOOKS(tx_abort, txid, r); }

void sstm__hooks_clear(void) {
  for (int i = 0; i < SSTM_MAX_HOOKS; i++)
    hooks[i].h = NULL;
  atomic_store_explicit(&sstm__g.nhooks, 0, memory_order_relaxed);
}
