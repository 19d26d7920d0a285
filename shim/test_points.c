/* The test hook's storage (shim/test_points.h), in the hooks build only: the production
 * library defines nothing here. Owns tscshim_test_hook; touches nothing else. */
#include "test_points.h"

#ifdef TSCSHIM_TEST_HOOKS
SHIM_EXPORT void (*tscshim_test_hook)(int point);
#endif
