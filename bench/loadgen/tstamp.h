/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Kernel timestamps for replies (and, optionally, sends).
 *
 * A reply's time is when the kernel received the segment that completed
 * it (SO_TIMESTAMPING's software RX timestamp, returned with recvmsg), not
 * when the loop got round to reading it: the loop may have been spinning
 * for a send, asleep, or busy with another connection, and that delay is
 * the client's, not the server's. The kernel stamps in CLOCK_REALTIME;
 * the schedule runs on CLOCK_MONOTONIC, so each stamp is converted with
 * the offset between the two clocks read right after the recvmsg.
 */
#ifndef LG_TSTAMP_H
#define LG_TSTAMP_H

#include <stdint.h>
#include <sys/socket.h>

/* What the loop knows about one read: the kernel's stamp (CLOCK_REALTIME
 * ns, 0 when the read carried none) and the two clocks read after it. */
typedef struct {
    uint64_t kernel_real;
    uint64_t real_now, mono_now;
} lg_rx_time;

/* Ask for RX stamps (and TX stamps, keyed by stream byte, if `tx`) on a
 * connected socket; -1 (errno) if the kernel refuses. */
int lg_ts_enable(int fd, int tx);
/* The SCM_TIMESTAMPING software stamp in a received message, 0 if none. */
uint64_t lg_ts_from_msg(struct msghdr *msg);
/* A TX stamp from the error queue: 1 with the stream key of the last byte
 * it covers and its CLOCK_REALTIME ns, 0 if the message is something else. */
int lg_ts_tx_from_msg(struct msghdr *msg, uint32_t *key, uint64_t *real_ns);
/* A CLOCK_REALTIME stamp on the CLOCK_MONOTONIC scale, never after
 * mono_now (the conversion is good to the clocks' reading gap). */
uint64_t lg_ts_to_mono(uint64_t real_ns, uint64_t real_now, uint64_t mono_now);
/* When the reply to a request sent at `sent_ns` arrived: the kernel's
 * time if the read had one and it is plausible (not before the send),
 * otherwise the loop's; *kernel says which. */
uint64_t lg_ts_reply_at(const lg_rx_time *rx, uint64_t sent_ns, int *kernel);

#endif
