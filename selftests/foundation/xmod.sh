#!/bin/sh
# The cross-module Rust API: rdma_xmod_test calls rdma_core's exported API
# and rdma_core calls back into it through trait objects.
. ../lib/ktap.sh
. ../lib/cleanup.sh

ktap_plan
ktap_module rdma_xmod_test
ktap_check "rdma_core_loaded_as_dependency" grep -q '^rdma_core ' /proc/modules
rmmod rdma_xmod_test 2>/dev/null
ktap_check "rdma_core_unloads" rmmod rdma_core
ktap_finish
