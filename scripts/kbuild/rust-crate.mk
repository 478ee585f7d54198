# SPDX-License-Identifier: GPL-2.0
#
# Kbuild fragment for Rust crates that other modules of this project link
# against, and for the modules that use them (Documentation/build.rst,
# "Crates across modules"). Included from a folder's Kbuild:
#
#   include $(KBUILD_EXTMOD)/scripts/kbuild/rust-crate.mk
#
# A library crate (the crate root CRATE.rs, compiled as CRATE.o into its
# module) sets, before the include:
#
#   rust-lib := CRATE          emit the crate's metadata (libCRATE.rmeta)
#                              for consumers, and export every Rust symbol of
#                              CRATE.o from $(rust-lib-shim)exports.c, which
#                              includes the generated exports_generated.h
#   rust-lib-shim := DIR/      the folder of exports.c and, if it has
#                              bindings_helper.h and bindgen_parameters, of
#                              the bindgen input: bindings_generated.rs is
#                              then generated there, before CRATE.o
#
# A consumer lists, for each library it uses, the objects whose crates
# link against it:
#
#   rust-uses-rdma := rxe foo  (rxe.o and foo.o get --extern rdma)
#
# Libraries known here, and the folder (under the project's top) that
# builds each one:
rust-lib-dir-rdma := rdma_core
rust-lib-dir-peer_memory := peer_mem
rust-lib-dir-rtrs := rtrs

# --- consumers -------------------------------------------------------------
$(foreach lib,$(patsubst rust-lib-dir-%,%,$(filter rust-lib-dir-%,$(.VARIABLES))), \
	$(foreach o,$(rust-uses-$(lib)), \
		$(eval RUSTFLAGS_$(o).o += -L $(KBUILD_EXTMOD)/$(rust-lib-dir-$(lib)) --extern $(lib))))

# --- a library crate -------------------------------------------------------
ifneq ($(rust-lib),)

RUSTFLAGS_$(rust-lib).o += --emit=metadata=$(obj)/lib$(rust-lib).rmeta

# Every Rust symbol of the crate is exported, but not the module init/exit
# glue, which modpost refuses to see exported, nor symbols over 400
# characters: modpost cannot take them (a 500-byte line limit), and they are
# the crate's own deep generic instantiations; were a consumer to need one,
# modpost would fail its build as unresolved.
quiet_cmd_rust_lib_exports = EXPORTS $@
      cmd_rust_lib_exports = \
	$(NM) -p --defined-only $< | \
	awk '$$2 ~ /^[TRDB]$$/ && $$3 ~ /^_R/ && $$3 !~ /__module_init/ && length($$3) < 400 { print "EXPORT_SYMBOL_RUST_GPL(" $$3 ");" }' > $@

$(obj)/$(rust-lib-shim)exports_generated.h: $(obj)/$(rust-lib).o FORCE
	$(call if_changed,rust_lib_exports)

$(obj)/$(rust-lib-shim)exports.o: $(obj)/$(rust-lib-shim)exports_generated.h

targets += $(rust-lib-shim)exports_generated.h

ifneq ($(wildcard $(src)/$(rust-lib-shim)bindgen_parameters),)
# Raw bindings for what the 6.12 kernel crate lacks, with the flags the
# kernel's rust/Makefile gives bindgen.
rust_lib_bindgen_skip_c_flags := -mno-fp-ret-in-387 -mpreferred-stack-boundary=% \
	-mskip-rax-setup -mgeneral-regs-only -msign-return-address=% \
	-mindirect-branch=thunk-extern -mindirect-branch-register \
	-mfunction-return=thunk-extern -mrecord-mcount -mabi=lp64 \
	-mindirect-branch-cs-prefix -mstack-protector-guard% -mtraceback=no \
	-mno-pointers-to-nested-functions -mno-string \
	-mno-strict-align -mstrict-align -mdirect-extern-access \
	-mexplicit-relocs -mno-check-zero-division \
	-fconserve-stack -falign-jumps=% -falign-loops=% \
	-femit-struct-debug-baseonly -fno-ipa-cp-clone -fno-ipa-sra \
	-fno-partial-inlining -fplugin-arg-arm_ssp_per_task_plugin-% \
	-fno-reorder-blocks -fno-allow-store-data-races -fasan-shadow-offset=% \
	-fzero-call-used-regs=% -fno-stack-clash-protection \
	-fno-inline-functions-called-once -fsanitize=bounds-strict \
	-fstrict-flex-arrays=% -fmin-function-alignment=% \
	-fzero-init-padding-bits=% -mno-fdpic \
	--param=% --param asan-% -fno-isolate-erroneous-paths-dereference

rust_lib_bindgen_c_flags = $(filter-out $(rust_lib_bindgen_skip_c_flags), $(c_flags)) \
	-w --target=x86_64-linux-gnu -fno-builtin -D__BINDGEN__ -DMODULE \
	$(if $(CONFIG_INIT_STACK_ALL_ZERO),-enable-trivial-auto-var-init-zero-knowing-it-will-be-removed-from-clang)

quiet_cmd_rust_lib_bindgen = BINDGEN $@
      cmd_rust_lib_bindgen = \
	$(BINDGEN) $< $(shell grep -Ev '^\#|^$$' $(src)/$(rust-lib-shim)bindgen_parameters) \
		--rust-target 1.68 --use-core --with-derive-default \
		--ctypes-prefix ffi --no-layout-tests --no-debug '.*' \
		--enable-function-attribute-detection \
		-o $@ -- $(rust_lib_bindgen_c_flags)

$(obj)/$(rust-lib-shim)bindings_generated.rs: $(src)/$(rust-lib-shim)bindings_helper.h \
		$(src)/$(rust-lib-shim)bindgen_parameters FORCE
	$(call if_changed_dep,rust_lib_bindgen)

$(obj)/$(rust-lib).o: $(obj)/$(rust-lib-shim)bindings_generated.rs

targets += $(rust-lib-shim)bindings_generated.rs
endif

endif
