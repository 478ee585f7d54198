// SPDX-License-Identifier: GPL-2.0

//! Helpers shared by the integration tests (`mod common;`).

pub(crate) mod uapi;
