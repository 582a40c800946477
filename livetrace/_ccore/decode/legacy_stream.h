/* A complete Go 1.11-1.21 trace's exact events a batch at a time
 * (legacy_stream.c). */

#ifndef LIVETRACE_LEGACY_STREAM_H
#define LIVETRACE_LEGACY_STREAM_H

struct _object;
struct _object *legacy_stream(struct _object *module, struct _object *args);
int legacy_stream_register(struct _object *module);

#endif
