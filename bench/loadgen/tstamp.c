/* SPDX-License-Identifier: BSD-3-Clause */
/* Kernel software timestamps: enabling them, reading them from control
 * messages, and choosing between them and the loop's clock. */
#define _GNU_SOURCE
#include "tstamp.h"

#include <errno.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <string.h>

int lg_ts_enable(int fd, int tx)
{
    /* SOFTWARE reports the stamps the RX/TX flags generate. OPT_ID keys
     * each TX stamp by the stream offset of the last byte of its send(),
     * which is how it finds its requests; OPT_TSONLY spares us a copy of
     * the packet on the error queue. */
    int flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;

    if (tx)
        flags |= SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_OPT_ID | SOF_TIMESTAMPING_OPT_TSONLY;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof(flags));
}

static uint64_t ts_ns(const struct timespec *ts)
{
    return (uint64_t)ts->tv_sec * 1000000000ULL + (uint64_t)ts->tv_nsec;
}

uint64_t lg_ts_from_msg(struct msghdr *msg)
{
    struct cmsghdr *cm;

    for (cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPING) {
            struct scm_timestamping tss;

            /* ts[0] is the software stamp; [2] (hardware) is unused. */
            memcpy(&tss, CMSG_DATA(cm), sizeof(tss));
            return ts_ns(&tss.ts[0]);
        }
    }
    return 0;
}

static const struct sock_extended_err *tx_error(struct cmsghdr *cm)
{
    if (!((cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_RECVERR) ||
          (cm->cmsg_level == SOL_IPV6 && cm->cmsg_type == IPV6_RECVERR)))
        return NULL;
    return (const struct sock_extended_err *)CMSG_DATA(cm);
}

int lg_ts_tx_from_msg(struct msghdr *msg, uint32_t *key, uint64_t *real_ns)
{
    struct cmsghdr *cm;
    int have_key = 0;

    *real_ns = lg_ts_from_msg(msg);
    for (cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
        const struct sock_extended_err *ee = tx_error(cm);

        if (ee && ee->ee_errno == ENOMSG && ee->ee_origin == SO_EE_ORIGIN_TIMESTAMPING &&
            ee->ee_info == SCM_TSTAMP_SND) {
            *key = ee->ee_data;
            have_key = 1;
        }
    }
    return have_key && *real_ns != 0;
}

uint64_t lg_ts_to_mono(uint64_t real_ns, uint64_t real_now, uint64_t mono_now)
{
    uint64_t ago = real_now > real_ns ? real_now - real_ns : 0;

    return ago < mono_now ? mono_now - ago : 0;
}

uint64_t lg_ts_reply_at(const lg_rx_time *rx, uint64_t sent_ns, int *kernel)
{
    uint64_t at;

    *kernel = 0;
    if (rx->kernel_real == 0)
        return rx->mono_now;
    at = lg_ts_to_mono(rx->kernel_real, rx->real_now, rx->mono_now);
    /* A stamp from before the request left is not this reply's. */
    if (at < sent_ns)
        return rx->mono_now;
    *kernel = 1;
    return at;
}
