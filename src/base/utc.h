/* base/utc.h - the one timestamp form of every sealed document: YYYY-MM-DDTHH:MM:SSZ. */
#ifndef FIDELIS_UTC_H
#define FIDELIS_UTC_H

#include <stdbool.h>

#include "fidelis/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Length of such a timestamp, without the NUL. */
#define FDL_UTC_LEN 20

/* True when s is exactly YYYY-MM-DDTHH:MM:SSZ and names a real instant: Gregorian calendar,
 * years 0001-9999, the month's own number of days (leap years included), hours 00-23, minutes
 * and seconds 00-59 (no leap second, as Python's datetime reads it). */
bool fdl_utc_valid(const char *s);

#ifdef __cplusplus
}
#endif
#endif
