// SPDX-License-Identifier: GPL-2.0

//! The numbers of the RDMA netlink codec (`rdma_spec::netlink`) against
//! the C headers: `include/uapi/rdma/rdma_netlink.h` (clients, NLDEV
//! commands and attributes, node types), `ib_user_ioctl_verbs.h` (the
//! driver ID) and `ib_user_verbs.h` (the uverbs ABI version) of the Linux
//! 6.12 tree under `~/.cache/rdma-rs/linux-6.12*/` (or the directory
//! `RDMA_RS_UAPI_RDMA` names, or the system's `<rdma/...>`), and the
//! system's `<linux/netlink.h>` (message and attribute layout, control
//! types and flags). A small C program prints each value; without a C
//! compiler or headers the test says so on stderr and passes.

use std::collections::BTreeMap;

mod common;

use rdma_spec::netlink::msg::{self, flags, msg_type};
use rdma_spec::netlink::nldev::{self, attr, client, cmd};

/// Every number, by its C expression.
#[rustfmt::skip]
fn numbers() -> Vec<(&'static str, u64)> {
    let v = |x: u16| u64::from(x);
    vec![
        ("RDMA_NL_IWCM", v(client::IWCM)),
        ("RDMA_NL_LS", v(client::LS)),
        ("RDMA_NL_NLDEV", v(client::NLDEV)),
        ("RDMA_NL_NUM_CLIENTS", v(client::NUM_CLIENTS)),
        ("RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET)", v(nldev::nl_type(client::NLDEV, cmd::GET))),
        ("RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_MONITOR)", v(nldev::nl_type(client::NLDEV, cmd::MONITOR))),
        ("RDMA_NL_GET_CLIENT(0xffff)", v(nldev::nl_client(0xffff))),
        ("RDMA_NL_GET_OP(0xffff)", v(nldev::nl_op(0xffff))),
        ("RDMA_NL_GET_CLIENT(0x140f)", v(nldev::nl_client(0x140f))),
        ("RDMA_NL_GET_OP(0x140f)", v(nldev::nl_op(0x140f))),
        ("RDMA_NLDEV_CMD_GET", v(cmd::GET)),
        ("RDMA_NLDEV_CMD_SET", v(cmd::SET)),
        ("RDMA_NLDEV_CMD_NEWLINK", v(cmd::NEWLINK)),
        ("RDMA_NLDEV_CMD_DELLINK", v(cmd::DELLINK)),
        ("RDMA_NLDEV_CMD_PORT_GET", v(cmd::PORT_GET)),
        ("RDMA_NLDEV_CMD_SYS_GET", v(cmd::SYS_GET)),
        ("RDMA_NLDEV_CMD_SYS_SET", v(cmd::SYS_SET)),
        ("RDMA_NLDEV_CMD_RES_GET", v(cmd::RES_GET)),
        ("RDMA_NLDEV_CMD_RES_QP_GET", v(cmd::RES_QP_GET)),
        ("RDMA_NLDEV_CMD_RES_CM_ID_GET", v(cmd::RES_CM_ID_GET)),
        ("RDMA_NLDEV_CMD_RES_CQ_GET", v(cmd::RES_CQ_GET)),
        ("RDMA_NLDEV_CMD_RES_MR_GET", v(cmd::RES_MR_GET)),
        ("RDMA_NLDEV_CMD_RES_PD_GET", v(cmd::RES_PD_GET)),
        ("RDMA_NLDEV_CMD_GET_CHARDEV", v(cmd::GET_CHARDEV)),
        ("RDMA_NLDEV_CMD_STAT_SET", v(cmd::STAT_SET)),
        ("RDMA_NLDEV_CMD_STAT_GET", v(cmd::STAT_GET)),
        ("RDMA_NLDEV_CMD_STAT_DEL", v(cmd::STAT_DEL)),
        ("RDMA_NLDEV_CMD_RES_QP_GET_RAW", v(cmd::RES_QP_GET_RAW)),
        ("RDMA_NLDEV_CMD_RES_CQ_GET_RAW", v(cmd::RES_CQ_GET_RAW)),
        ("RDMA_NLDEV_CMD_RES_MR_GET_RAW", v(cmd::RES_MR_GET_RAW)),
        ("RDMA_NLDEV_CMD_RES_CTX_GET", v(cmd::RES_CTX_GET)),
        ("RDMA_NLDEV_CMD_RES_SRQ_GET", v(cmd::RES_SRQ_GET)),
        ("RDMA_NLDEV_CMD_STAT_GET_STATUS", v(cmd::STAT_GET_STATUS)),
        ("RDMA_NLDEV_CMD_RES_SRQ_GET_RAW", v(cmd::RES_SRQ_GET_RAW)),
        ("RDMA_NLDEV_CMD_NEWDEV", v(cmd::NEWDEV)),
        ("RDMA_NLDEV_CMD_DELDEV", v(cmd::DELDEV)),
        ("RDMA_NLDEV_CMD_MONITOR", v(cmd::MONITOR)),
        ("RDMA_NLDEV_NUM_OPS", v(cmd::NUM_OPS)),
        ("RDMA_NLDEV_ATTR_DEV_INDEX", v(attr::DEV_INDEX)),
        ("RDMA_NLDEV_ATTR_DEV_NAME", v(attr::DEV_NAME)),
        ("RDMA_NLDEV_ATTR_PORT_INDEX", v(attr::PORT_INDEX)),
        ("RDMA_NLDEV_ATTR_CAP_FLAGS", v(attr::CAP_FLAGS)),
        ("RDMA_NLDEV_ATTR_FW_VERSION", v(attr::FW_VERSION)),
        ("RDMA_NLDEV_ATTR_NODE_GUID", v(attr::NODE_GUID)),
        ("RDMA_NLDEV_ATTR_SYS_IMAGE_GUID", v(attr::SYS_IMAGE_GUID)),
        ("RDMA_NLDEV_ATTR_SUBNET_PREFIX", v(attr::SUBNET_PREFIX)),
        ("RDMA_NLDEV_ATTR_LID", v(attr::LID)),
        ("RDMA_NLDEV_ATTR_SM_LID", v(attr::SM_LID)),
        ("RDMA_NLDEV_ATTR_LMC", v(attr::LMC)),
        ("RDMA_NLDEV_ATTR_PORT_STATE", v(attr::PORT_STATE)),
        ("RDMA_NLDEV_ATTR_PORT_PHYS_STATE", v(attr::PORT_PHYS_STATE)),
        ("RDMA_NLDEV_ATTR_DEV_NODE_TYPE", v(attr::DEV_NODE_TYPE)),
        ("RDMA_NLDEV_ATTR_RES_SUMMARY", v(attr::RES_SUMMARY)),
        ("RDMA_NLDEV_ATTR_NDEV_INDEX", v(attr::NDEV_INDEX)),
        ("RDMA_NLDEV_ATTR_NDEV_NAME", v(attr::NDEV_NAME)),
        ("RDMA_NLDEV_ATTR_LINK_TYPE", v(attr::LINK_TYPE)),
        ("RDMA_NLDEV_SYS_ATTR_NETNS_MODE", v(attr::SYS_NETNS_MODE)),
        ("RDMA_NLDEV_ATTR_DEV_PROTOCOL", v(attr::DEV_PROTOCOL)),
        ("RDMA_NLDEV_NET_NS_FD", v(attr::NET_NS_FD)),
        ("RDMA_NLDEV_ATTR_CHARDEV_TYPE", v(attr::CHARDEV_TYPE)),
        ("RDMA_NLDEV_ATTR_CHARDEV_NAME", v(attr::CHARDEV_NAME)),
        ("RDMA_NLDEV_ATTR_CHARDEV_ABI", v(attr::CHARDEV_ABI)),
        ("RDMA_NLDEV_ATTR_CHARDEV", v(attr::CHARDEV)),
        ("RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID", v(attr::UVERBS_DRIVER_ID)),
        ("RDMA_NLDEV_ATTR_DEV_DIM", v(attr::DEV_DIM)),
        ("RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK", v(attr::SYS_COPY_ON_FORK)),
        ("RDMA_NLDEV_SYS_ATTR_PRIVILEGED_QKEY_MODE", v(attr::SYS_PRIVILEGED_QKEY_MODE)),
        ("RDMA_NLDEV_ATTR_DEV_TYPE", v(attr::DEV_TYPE)),
        ("RDMA_NLDEV_ATTR_NAME_ASSIGN_TYPE", v(attr::NAME_ASSIGN_TYPE)),
        ("RDMA_NLDEV_SYS_ATTR_MONITOR_MODE", v(attr::SYS_MONITOR_MODE)),
        ("RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY", v(attr::RES_SUMMARY_ENTRY)),
        ("RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME", v(attr::RES_SUMMARY_ENTRY_NAME)),
        ("RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR", v(attr::RES_SUMMARY_ENTRY_CURR)),
        ("RDMA_NLDEV_ATTR_RES_QP", v(attr::RES_QP)),
        ("RDMA_NLDEV_ATTR_RES_QP_ENTRY", v(attr::RES_QP_ENTRY)),
        ("RDMA_NLDEV_ATTR_RES_LQPN", v(attr::RES_LQPN)),
        ("RDMA_NLDEV_ATTR_RES_RQPN", v(attr::RES_RQPN)),
        ("RDMA_NLDEV_ATTR_RES_RQ_PSN", v(attr::RES_RQ_PSN)),
        ("RDMA_NLDEV_ATTR_RES_SQ_PSN", v(attr::RES_SQ_PSN)),
        ("RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE", v(attr::RES_PATH_MIG_STATE)),
        ("RDMA_NLDEV_ATTR_RES_TYPE", v(attr::RES_TYPE)),
        ("RDMA_NLDEV_ATTR_RES_STATE", v(attr::RES_STATE)),
        ("RDMA_NLDEV_ATTR_RES_PID", v(attr::RES_PID)),
        ("RDMA_NLDEV_ATTR_RES_KERN_NAME", v(attr::RES_KERN_NAME)),
        ("RDMA_NLDEV_ATTR_RES_CM_ID", v(attr::RES_CM_ID)),
        ("RDMA_NLDEV_ATTR_RES_CM_ID_ENTRY", v(attr::RES_CM_ID_ENTRY)),
        ("RDMA_NLDEV_ATTR_RES_CQ", v(attr::RES_CQ)),
        ("RDMA_NLDEV_ATTR_RES_CQ_ENTRY", v(attr::RES_CQ_ENTRY)),
        ("RDMA_NLDEV_ATTR_RES_CQE", v(attr::RES_CQE)),
        ("RDMA_NLDEV_ATTR_RES_USECNT", v(attr::RES_USECNT)),
        ("RDMA_NLDEV_ATTR_RES_POLL_CTX", v(attr::RES_POLL_CTX)),
        ("RDMA_NLDEV_ATTR_RES_MR", v(attr::RES_MR)),
        ("RDMA_NLDEV_ATTR_RES_MR_ENTRY", v(attr::RES_MR_ENTRY)),
        ("RDMA_NLDEV_ATTR_RES_RKEY", v(attr::RES_RKEY)),
        ("RDMA_NLDEV_ATTR_RES_LKEY", v(attr::RES_LKEY)),
        ("RDMA_NLDEV_ATTR_RES_IOVA", v(attr::RES_IOVA)),
        ("RDMA_NLDEV_ATTR_RES_MRLEN", v(attr::RES_MRLEN)),
        ("RDMA_NLDEV_ATTR_RES_PD", v(attr::RES_PD)),
        ("RDMA_NLDEV_ATTR_RES_PD_ENTRY", v(attr::RES_PD_ENTRY)),
        ("RDMA_NLDEV_ATTR_RES_LOCAL_DMA_LKEY", v(attr::RES_LOCAL_DMA_LKEY)),
        ("RDMA_NLDEV_ATTR_RES_UNSAFE_GLOBAL_RKEY", v(attr::RES_UNSAFE_GLOBAL_RKEY)),
        ("RDMA_NLDEV_ATTR_RES_PDN", v(attr::RES_PDN)),
        ("RDMA_NLDEV_ATTR_RES_CQN", v(attr::RES_CQN)),
        ("RDMA_NLDEV_ATTR_RES_MRN", v(attr::RES_MRN)),
        ("RDMA_NLDEV_ATTR_RES_CTXN", v(attr::RES_CTXN)),
        ("RDMA_NLDEV_ATTR_STAT_RES", v(attr::STAT_RES)),
        ("RDMA_NLDEV_ATTR_STAT_HWCOUNTERS", v(attr::STAT_HWCOUNTERS)),
        ("RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY", v(attr::STAT_HWCOUNTER_ENTRY)),
        ("RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME", v(attr::STAT_HWCOUNTER_ENTRY_NAME)),
        ("RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE", v(attr::STAT_HWCOUNTER_ENTRY_VALUE)),
        ("RDMA_NLDEV_ATTR_RES_CTX", v(attr::RES_CTX)),
        ("RDMA_NLDEV_ATTR_RES_CTX_ENTRY", v(attr::RES_CTX_ENTRY)),
        ("RDMA_NLDEV_ATTR_RES_SRQ", v(attr::RES_SRQ)),
        ("RDMA_NLDEV_ATTR_RES_SRQ_ENTRY", v(attr::RES_SRQ_ENTRY)),
        ("RDMA_NLDEV_ATTR_RES_SRQN", v(attr::RES_SRQN)),
        ("RDMA_NLDEV_ATTR_MIN_RANGE", v(attr::MIN_RANGE)),
        ("RDMA_NLDEV_ATTR_MAX_RANGE", v(attr::MAX_RANGE)),
        ("RDMA_NLDEV_ATTR_DRIVER_DETAILS", v(attr::DRIVER_DETAILS)),
        ("RDMA_NLDEV_ATTR_MAX", v(attr::MAX)),
        ("IFNAMSIZ - 1", nldev::IFNAME_MAX as u64),
        ("RDMA_NODE_IB_CA", u64::from(nldev::NODE_IB_CA)),
        ("RDMA_DRIVER_RXE", u64::from(nldev::RDMA_DRIVER_RXE)),
        ("IB_USER_VERBS_ABI_VERSION", nldev::UVERBS_ABI_VERSION),
        ("NETLINK_RDMA", 20),
        ("sizeof(struct nlmsghdr)", msg::NLMSG_HDRLEN as u64),
        ("NLMSG_HDRLEN", msg::NLMSG_HDRLEN as u64),
        ("offsetof(struct nlmsghdr, nlmsg_type)", 4),
        ("offsetof(struct nlmsghdr, nlmsg_flags)", 6),
        ("offsetof(struct nlmsghdr, nlmsg_seq)", 8),
        ("offsetof(struct nlmsghdr, nlmsg_pid)", 12),
        ("sizeof(struct nlmsgerr) - sizeof(struct nlmsghdr)", 4),
        ("NLA_HDRLEN", msg::NLA_HDRLEN as u64),
        ("offsetof(struct nlattr, nla_type)", 2),
        ("NLA_F_NESTED", v(msg::NLA_F_NESTED)),
        ("NLA_F_NET_BYTEORDER", v(msg::NLA_F_NET_BYTEORDER)),
        ("(unsigned short)NLA_TYPE_MASK", v(msg::NLA_TYPE_MASK)),
        ("NLMSG_NOOP", v(msg_type::NOOP)),
        ("NLMSG_ERROR", v(msg_type::ERROR)),
        ("NLMSG_DONE", v(msg_type::DONE)),
        ("NLMSG_OVERRUN", v(msg_type::OVERRUN)),
        ("NLMSG_MIN_TYPE", v(msg_type::MIN_TYPE)),
        ("NLM_F_REQUEST", v(flags::REQUEST)),
        ("NLM_F_MULTI", v(flags::MULTI)),
        ("NLM_F_ACK", v(flags::ACK)),
        ("NLM_F_ECHO", v(flags::ECHO)),
        ("NLM_F_DUMP", v(flags::DUMP)),
        ("NLM_F_CAPPED", v(flags::CAPPED)),
        ("NLMSG_ALIGN(13)", msg::align4(13).unwrap() as u64),
        ("NLA_ALIGN(9)", msg::align4(9).unwrap() as u64),
    ]
}

#[test]
fn numbers_match_c_headers() {
    let scratch = std::env::temp_dir().join(format!("rdma-spec-netlink-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&scratch);
    let Some(inc) = common::uapi::header_dir(&scratch, "rdma_netlink.h", "netlink layout") else {
        eprintln!("SKIPPED numbers_match_c_headers: no rdma uapi headers found");
        return;
    };
    let mut src = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include <linux/netlink.h>\n\
         #include <linux/if.h>\n#include <rdma/rdma_netlink.h>\n\
         #include <rdma/ib_user_ioctl_verbs.h>\n#include <rdma/ib_user_verbs.h>\n\
         int main(void)\n{\n",
    );
    let mut want = BTreeMap::new();
    for (i, (expr, value)) in numbers().into_iter().enumerate() {
        src += &format!("\tprintf(\"{i} %llu\\n\", (unsigned long long)({expr}));\n");
        want.insert(i, (expr, value));
    }
    src += "\treturn 0;\n}\n";
    let Some(text) = common::uapi::run_c(&scratch, &inc, "nl", &src) else {
        eprintln!("SKIPPED numbers_match_c_headers");
        return;
    };
    let _ = std::fs::remove_dir_all(&scratch);
    let mut bad = Vec::new();
    let mut seen = 0;
    for l in text.lines() {
        let (k, v) = l.split_once(' ').expect("index value");
        let k: usize = k.parse().expect("index");
        let v: u64 = v.parse().expect("value");
        let (expr, rust) = want[&k];
        if v != rust {
            bad.push(format!("{expr}: C {v}, Rust {rust}"));
        }
        seen += 1;
    }
    assert!(
        bad.is_empty(),
        "numbers differ from the C headers:\n{}",
        bad.join("\n")
    );
    assert_eq!(seen, want.len());
    eprintln!("netlink layout: {seen} numbers agree with C");
}
