/* What the shim exports: the entry points it interposes and its query API (exports.map),
 * each marked with SHIM_EXPORT; everything else is hidden (-fvisibility=hidden). */
#ifndef SHIM_EXPORT_H
#define SHIM_EXPORT_H

#define SHIM_EXPORT __attribute__((visibility("default")))

#endif
