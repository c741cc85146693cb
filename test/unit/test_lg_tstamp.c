/* SPDX-License-Identifier: BSD-3-Clause */
/* loadgen reply times: the kernel's stamp when there is a plausible one,
 * the loop's read otherwise; and reading stamps out of control messages. */
#include <errno.h>
#include <time.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include <criterion/criterion.h>

#include "tstamp.h"

/* The realtime clock runs 1000 s ahead of the monotonic one here. */
#define OFFSET 1000000000000ULL

Test(tstamp, converts_to_the_monotonic_scale)
{
    cr_assert_eq(lg_ts_to_mono(OFFSET + 5000, OFFSET + 9000, 9000), 5000);
    /* A stamp "after" the clocks were read (conversion noise) is now. */
    cr_assert_eq(lg_ts_to_mono(OFFSET + 9500, OFFSET + 9000, 9000), 9000);
}

Test(tstamp, reply_takes_the_kernel_time)
{
    lg_rx_time rx = { .kernel_real = OFFSET + 7000, .real_now = OFFSET + 9000, .mono_now = 9000 };
    int kernel = -1;

    cr_assert_eq(lg_ts_reply_at(&rx, 6000, &kernel), 7000);
    cr_assert_eq(kernel, 1);
}

Test(tstamp, no_stamp_falls_back_to_the_loop)
{
    lg_rx_time rx = { .kernel_real = 0, .real_now = 0, .mono_now = 9000 };
    int kernel = -1;

    cr_assert_eq(lg_ts_reply_at(&rx, 6000, &kernel), 9000);
    cr_assert_eq(kernel, 0);
}

Test(tstamp, stamp_before_the_send_falls_back_to_the_loop)
{
    lg_rx_time rx = { .kernel_real = OFFSET + 5000, .real_now = OFFSET + 9000, .mono_now = 9000 };
    int kernel = -1;

    cr_assert_eq(lg_ts_reply_at(&rx, 6000, &kernel), 9000);
    cr_assert_eq(kernel, 0);
}

/* A control buffer holding one SCM_TIMESTAMPING and, for TX, an IP_RECVERR. */
typedef struct {
    union { struct cmsghdr align; char buf[256]; } control;
    struct msghdr msg;
} fake_msg;

static void add_stamp(fake_msg *m, time_t sec, long nsec, int with_err, uint32_t key)
{
    struct scm_timestamping tss = { .ts = { { sec, nsec } } };
    struct sock_extended_err ee = { .ee_errno = ENOMSG, .ee_origin = SO_EE_ORIGIN_TIMESTAMPING,
                                    .ee_info = SCM_TSTAMP_SND, .ee_data = key };
    struct cmsghdr *cm;

    memset(m, 0, sizeof(*m));
    m->msg.msg_control = m->control.buf;
    m->msg.msg_controllen = CMSG_SPACE(sizeof(tss)) + (with_err ? CMSG_SPACE(sizeof(ee)) : 0);
    cm = CMSG_FIRSTHDR(&m->msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_TIMESTAMPING;
    cm->cmsg_len = CMSG_LEN(sizeof(tss));
    memcpy(CMSG_DATA(cm), &tss, sizeof(tss));
    if (!with_err)
        return;
    cm = CMSG_NXTHDR(&m->msg, cm);
    cm->cmsg_level = SOL_IP;
    cm->cmsg_type = IP_RECVERR;
    cm->cmsg_len = CMSG_LEN(sizeof(ee));
    memcpy(CMSG_DATA(cm), &ee, sizeof(ee));
}

Test(tstamp, reads_the_rx_stamp)
{
    fake_msg m;

    add_stamp(&m, 3, 250, 0, 0);
    cr_assert_eq(lg_ts_from_msg(&m.msg), 3000000250ULL);
}

Test(tstamp, no_control_message_is_no_stamp)
{
    struct msghdr msg = { 0 };

    cr_assert_eq(lg_ts_from_msg(&msg), 0);
}

Test(tstamp, reads_a_tx_stamp_and_its_key)
{
    fake_msg m;
    uint32_t key = 0;
    uint64_t real = 0;

    add_stamp(&m, 2, 5, 1, 1234);
    cr_assert_eq(lg_ts_tx_from_msg(&m.msg, &key, &real), 1);
    cr_assert_eq(key, 1234);
    cr_assert_eq(real, 2000000005ULL);
}

Test(tstamp, a_stamp_without_its_key_is_not_a_tx_stamp)
{
    fake_msg m;
    uint32_t key;
    uint64_t real;

    add_stamp(&m, 2, 5, 0, 0);
    cr_assert_eq(lg_ts_tx_from_msg(&m.msg, &key, &real), 0);
}
