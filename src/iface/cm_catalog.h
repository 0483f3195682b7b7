/* SPDX-License-Identifier: MIT */
/* What the policy layer (src/cm/registry.c) offers the engine: the
 * catalogue of contention managers by name. The engine selects the
 * configured policy through this table only, and the policy layer reaches
 * the engine through cm.h and cm_services.h only, so the two depend on
 * each other one way each, through these two headers, never by calling
 * each other's files directly.
 */
#ifndef SSTM_IFACE_CM_CATALOG_H
#define SSTM_IFACE_CM_CATALOG_H

#include <stddef.h>

#include <schedstm/cm.h>

typedef struct sstm_cm_catalog {
  /* The policy named `name` (a registered one, or "P+ext" for a registered
   * P; see sstm_cm_find) into *out: 0, SSTM_ENOENT for an unknown name
   * (NULL included) with the list of the valid ones in sstm_last_error(),
   * or SSTM_EINVAL for a "P+ext" that ext refuses to build (the reason
   * likewise). Takes the catalogue's mutex. */
  int (*select)(const char *name, const sstm_cm_ops_t **out);
  /* sstm_cm_list(): the names, for messages. */
  int (*list)(char *buf, size_t len);
} sstm_cm_catalog_t;

extern const sstm_cm_catalog_t sstm__cm_catalog;

#endif /* SSTM_IFACE_CM_CATALOG_H */
