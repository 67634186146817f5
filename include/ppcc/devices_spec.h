/* Heterogeneous devices (--devices-spec FILE.json): each device's memory
 * and relative speed, read by the driver and used by auto-partition (stage
 * sizes by speed, each device's memory as its budget) and the report.
 *
 * The file (README, "Heterogeneous devices"):
 *   {"devices": [{"memory": "8GiB", "speed": 1.0},
 *                {"memory": 4294967296, "speed": 2}, ...]}
 * - "devices": 1..PPCC_MAX_DEVICES objects; entry i describes device i.
 * - "memory": bytes, a positive integer or a string with a K, M, G or T
 *   suffix (powers of 1024; "KiB"/"KB" spellings accepted). Optional:
 *   without it the device has --device-memory (or no limit).
 * - "speed": relative speed, a finite number > 0; optional, default 1.0. A
 *   device of speed 2 runs the same ops in half the time of speed 1.
 * - "host": the host the device is on, an integer in [0, 4095]; optional.
 *   Devices without it are each on a host of their own (a distributed run
 *   puts the devices of one MPI rank on that rank's host instead).
 * - "links" (top level, optional): the network between hosts, an array of
 *     {"hosts": [A, B], "bandwidth": "1Gbit", "latency": "50us"}  (one pair)
 *     {"bandwidth": "100Mbit", "latency": "200us"}               (any other pair)
 *   bandwidth: bytes per second (a number), or a string "N[K|M|G]bit" (bits
 *   per second, powers of 1000) or "N[K|M|G]B/s"; latency: seconds (a
 *   number), or a string "Nus", "Nms" or "Ns". A transfer between devices
 *   on two hosts costs latency + bytes / bandwidth (the pair's entry, else
 *   the entry without "hosts"); devices on one host, or hosts with no
 *   entry, move data for free (as before links existed).
 * Any other key is an error (a typo must not silently mean "default"). */
#ifndef PPCC_DEVICES_SPEC_H
#define PPCC_DEVICES_SPEC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ppcc/diag.h"

#define PPCC_MAX_LINKS 256

/* One "links" entry: hosts a and b (both -1: any pair without an entry). */
typedef struct ppcc_link_spec {
  int a, b;
  double bytes_per_s; /* > 0 */
  double latency_s;   /* >= 0 */
} ppcc_link_spec;

typedef struct ppcc_devices_spec {
  const char *path; /* the file, for diagnostics and reports (owned) */
  int n_devices;
  int64_t *memory;  /* per device: bytes, 0 = not given */
  double *speed;    /* per device: relative speed (> 0, default 1.0) */
  int *host;        /* per device: its host, -1 = not given (NULL: none given) */
  int n_links;
  ppcc_link_spec *links;
} ppcc_devices_spec;

/* Parses text (len bytes) read from path into *out; on a bad file reports
 * "devices spec: devices[i].field ..." through d (make d for the spec
 * file, so the line reads "FILE: error: ...") and returns PPCC_ERR_USER
 * with *out empty. Free with ppcc_devices_spec_free. */
ppcc_status ppcc_devices_spec_parse(const char *path, const char *text, size_t len, ppcc_devices_spec *out,
                                    ppcc_diag *d);
/* Reads and parses the file. */
ppcc_status ppcc_devices_spec_load(const char *path, ppcc_devices_spec *out, ppcc_diag *d);
void ppcc_devices_spec_free(ppcc_devices_spec *s);
/* Device dev's relative speed: the spec's, 1.0 without a spec or past its
 * devices. */
double ppcc_devices_spec_speed(const ppcc_devices_spec *s, int dev);

/* The host of device dev: host_of[dev] when given (a distributed run's
 * ranks), else the spec's "host", else a host of its own (dev). */
int ppcc_devices_spec_host(const ppcc_devices_spec *s, const int *host_of, int dev);
/* Milliseconds to move `bytes` from device a to device b: 0 on one host
 * or without a link entry for their hosts, else latency + bytes / bandwidth. */
double ppcc_devices_spec_link_ms(const ppcc_devices_spec *s, const int *host_of, int a, int b, int64_t bytes);
/* The link entry between two distinct hosts, NULL when none applies. */
const ppcc_link_spec *ppcc_devices_spec_link(const ppcc_devices_spec *s, int host_a, int host_b);

/* A placed graph (explicit placement, no auto-partition): every device's
 * params + peak activations (the report's per-device accounting) within
 * its spec memory; else an error naming the device and the bytes. */
struct ppcc_graph;
ppcc_status ppcc_devices_spec_check_memory(const struct ppcc_graph *g, const ppcc_devices_spec *spec, ppcc_diag *d);

/* "16G", "512MiB", "1000": bytes, positive, no overflow. */
bool ppcc_parse_byte_count(const char *text, int64_t *out);

#endif
