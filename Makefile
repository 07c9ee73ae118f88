# SPDX-License-Identifier: GPL-2.0
#
# snowflake: /dev/snowflake, unique time-ordered 64-bit IDs.
#
# Module for the running kernel (its headers must be installed):
#   make                 build snowflake.ko (same as `make module`)
#   make install         install it and run depmod (as root)
#   make KERNELRELEASE=<release> / KERNELDIR=<dir>   another kernel
#
# Development (installs what is missing, tests in QEMU guests, never loads
# anything into the host kernel):
#   make check           every test: style, sparse, unit, fuzz, userspace, vmtest, debug-kernel
#   make run             boot a guest with the module and show it at work
#   make vmtest | style | sparse | unit | userspace | deps
#   make fuzz            libFuzzer on the core: replay fuzz/corpus + fuzz/crashes,
#                        then fuzz each target FUZZ_SECONDS (60) s
#   make debug-kernel    the guest suite on a lockdep/KASAN/UBSAN/kmemleak kernel
#   make bench           benchmarks (guest under QEMU TCG + callgrind): build/bench/
#
# The library and the CLI (userspace/; PREFIX defaults to /usr/local there):
#   make userspace       libsnowflake.so/.a, snowflake.pc, the snowflake CLI
#   make install-userspace / uninstall-userspace   (DESTDIR, PREFIX, ...)
#
# Quiet by default; V=1 shows the commands.

KERNELRELEASE ?= $(shell uname -r)
KERNELDIR ?= /lib/modules/$(KERNELRELEASE)/build
DEPMOD ?= depmod
PREFIX ?= /usr
DESTDIR ?=

ifeq ($(V),1)
Q :=
export V
else
Q := @
endif

SCRIPTS := $(CURDIR)/scripts

all: module

module:
	$(Q)if [ ! -f "$(KERNELDIR)/Makefile" ]; then \
		echo "No kernel headers for $(KERNELRELEASE) in $(KERNELDIR)."; \
		echo "  To build for this kernel: apt-get install linux-headers-$(KERNELRELEASE)"; \
		echo "  For another kernel: make KERNELDIR=/path/to/headers (or KERNELRELEASE=...)"; \
		echo "  To build and test in QEMU guests instead: make check (or make run)"; \
		exit 1; \
	fi
	$(Q)$(MAKE) -C "$(KERNELDIR)" M="$(CURDIR)" modules

install: module
	$(Q)$(MAKE) -C "$(KERNELDIR)" M="$(CURDIR)" modules_install
	$(Q)$(DEPMOD) -a $(KERNELRELEASE)

clean:
	$(Q)if [ -f "$(KERNELDIR)/Makefile" ]; then \
		$(MAKE) -C "$(KERNELDIR)" M="$(CURDIR)" clean; fi
	$(Q)rm -f driver/*.o driver/.*.cmd driver/*.mod* *.o *.ko *.mod *.mod.c \
		.*.cmd Module.symvers modules.order
	$(Q)rm -rf build/mod-* build/check-* build/initramfs-* build/run-* \
		build/selftests build/core build/fuzz build/userspace build/bench build/vm-*.log build/*.log

# Also drops the caches: downloaded guest kernels, extracted kernel source.
distclean: clean
	$(Q)rm -rf build

deps:
	$(Q)$(SCRIPTS)/deps.sh

ksrc:
	$(Q)$(SCRIPTS)/ksrc.sh

check:
	$(Q)$(SCRIPTS)/check.sh

run:
	$(Q)$(SCRIPTS)/run.sh

vmtest:
	$(Q)$(SCRIPTS)/vmtest.sh

# The whole guest suite on a tinyconfig 6.12 with lockdep, KASAN, UBSAN and
# kmemleak, built from linux-source-6.12 into build/debug-kernel/ (cached).
debug-kernel:
	$(Q)$(SCRIPTS)/debug-kernel.sh test

# Measures and prints; never part of check.  See BENCHMARKS.md.
bench:
	$(Q)$(SCRIPTS)/bench.sh

style: ksrc
	$(Q)$(SCRIPTS)/style.sh

sparse: deps
	$(Q)$(SCRIPTS)/sparse.sh

unit: ksrc
	$(Q)$(SCRIPTS)/unit.sh

fuzz: deps
	$(Q)$(SCRIPTS)/fuzz.sh

# Command-line variables (DESTDIR, PREFIX, ...) reach userspace/Makefile
# through MAKEFLAGS; PREFIX ?= /usr above is the module's and is not passed.
userspace:
	$(Q)$(MAKE) -C userspace

install-userspace:
	$(Q)$(MAKE) -C userspace install

uninstall-userspace:
	$(Q)$(MAKE) -C userspace uninstall

help:
	@sed -n '3,23s/^# \{0,1\}//p' $(firstword $(MAKEFILE_LIST))

.PHONY: all module install clean distclean deps ksrc check run vmtest debug-kernel bench style sparse unit fuzz \
	userspace install-userspace uninstall-userspace help
