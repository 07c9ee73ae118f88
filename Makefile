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
#   make check           every test (tests/lib/check.sh lists the stages,
#                        tests/README.md the lanes)
#   make run             boot a guest with the module and show it at work
#   make vmtest | style | sparse | unit | userspace | deps | ksrc
#   make fuzz            libFuzzer on the core: replay fuzz/corpus + fuzz/crashes,
#                        then fuzz each target FUZZ_SECONDS (60) s
#   make sim             the lease engine's deterministic simulator: SIM_SEEDS
#                        (10000) seeded schedules of the real agent.c; SEED=n
#                        replays one exactly, its schedule printed; FLAVOR=
#                        redis|etcd|zookeeper|mysql: on that store's semantics
#                        (default: each seed draws one)
#   make debug-kernel    the guest suite on a lockdep/KASAN/UBSAN/kmemleak kernel
#   make kernels-check   build W=1 against the newest headers the mirror has
#                        (Debian sid's newest linux-headers-*-amd64, in a sid root)
#   make bench           benchmarks (guest under QEMU TCG + callgrind): build/bench/
#   make bench-compare BASE=<commit>   P1 and P6 of BASE and of this tree in one
#                        guest, over the same placements: build/bench-compare/
#   make model           the lease protocol's Promela model checked by spin: the
#                        record protocol passes, today's ZooKeeper check fails
#
# The library and the CLI (userspace/; PREFIX defaults to /usr/local there):
#   make userspace       libsnowflake.so/.a, snowflake.pc, the snowflake CLI,
#                        snowflake-floord, snowflake-agent
#   make install-userspace / uninstall-userspace   (DESTDIR, PREFIX, ...)
#
# Debian packages (debian/): snowflake-dkms, snowflake-tools, snowflake-agent,
# libsnowflake1, libsnowflake-dev, built on a copy of the tree:
#   make deb             build/debs/*.deb; then apt install ./build/debs/snowflake-*.deb
#
# Packaging for a host without the packages (packaging/; docs/reference.md):
#   make install-packaging / uninstall-packaging   udev rule, modules-load.d,
#                        modprobe.d, sysusers.d, units, CDI spec (DESTDIR, ...)
#   make dkms-install / dkms-uninstall   the module under DKMS (as root)
#   make dkms-src        only the DKMS source tree, in $(DESTDIR)/usr/src
#   make restart         the restart proof of snowflake-floord in QEMU guests
#
# make clean drops what the builds and tests made; make distclean the caches
# too (downloaded guest kernels, extracted kernel source: all of build/), not
# the machine cache outside the clone (tests/README.md, "The machine cache").
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
TESTS := $(CURDIR)/tests
VERSION := $(shell cat $(CURDIR)/VERSION)

# Packaging.  The units name snowflake-floord by its installed path: the
# same SBINDIR as `make install-userspace` (PREFIX there defaults to
# /usr/local; a PREFIX given on the command line applies to both).
ifeq ($(origin PREFIX),command line)
SF_PREFIX := $(PREFIX)
else
SF_PREFIX := /usr/local
endif
SBINDIR ?= $(SF_PREFIX)/sbin
BINDIR ?= $(SF_PREFIX)/bin
SYSCONFDIR ?= /etc
UNITDIR ?= $(SYSCONFDIR)/systemd/system
UDEVRULESDIR ?= $(SYSCONFDIR)/udev/rules.d
MODULESLOADDIR ?= $(SYSCONFDIR)/modules-load.d
MODPROBEDIR ?= $(SYSCONFDIR)/modprobe.d
SYSUSERSDIR ?= $(SYSCONFDIR)/sysusers.d
TMPFILESDIR ?= $(SYSCONFDIR)/tmpfiles.d
CDIDIR ?= $(SYSCONFDIR)/cdi
DKMS ?= dkms
DKMS_SRC := /usr/src/snowflake-$(VERSION)
UNITS := $(notdir $(wildcard packaging/systemd/*.service packaging/systemd/*.timer))

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

# Not Kbuild's clean: with M= it deletes every *.o below this directory,
# the debug kernel's build tree in build/ included (tests/static/clean-test.sh).
clean:
	$(Q)rm -f driver/*.o driver/.*.cmd driver/*.mod* *.o .module-common.o *.ko \
		*.mod *.mod.c .*.cmd Module.symvers modules.order
	$(Q)rm -rf build/mod-* build/check-* build/initramfs-* build/run-* \
		build/selftests build/core build/fuzz build/sim build/userspace build/bench build/bench-smoke build/bench-compare \
		build/bench-place build/vm-*.log build/*.log \
		build/restart build/dkms build/packaging build/debs

# Also drops the caches: downloaded guest kernels, extracted kernel source.
distclean: clean
	$(Q)rm -rf build

deps:
	$(Q)$(SCRIPTS)/deps.sh

ksrc:
	$(Q)$(SCRIPTS)/ksrc.sh

check:
	$(Q)$(TESTS)/lib/check.sh

run:
	$(Q)$(SCRIPTS)/run.sh

vmtest:
	$(Q)$(TESTS)/vmtest/run.sh

# dpkg-buildpackage on a copy of the tree (it writes into debian/ and ..).
deb:
	$(Q)rm -rf build/debs && mkdir -p build/debs/src
	$(Q)tar --exclude=./build --exclude=./.git -cf - . | tar -C build/debs/src -xf -
	$(Q)cd build/debs/src && dpkg-buildpackage -us -uc -b >../build.log 2>&1 || \
		{ tail -n 30 ../build.log; exit 1; }
	$(Q)rm -rf build/debs/src build/debs/*dbgsym*
	$(Q)ls build/debs/*.deb

# The whole guest suite on a tinyconfig 6.12 with lockdep, KASAN, UBSAN and
# kmemleak, built from linux-source-6.12 into build/debug-kernel/ (cached).
debug-kernel:
	$(Q)$(TESTS)/debug-kernel/run.sh

# Measures and prints; never part of check.  See BENCHMARKS.md.
bench:
	$(Q)$(SCRIPTS)/bench.sh

# The headline figures of BASE against this tree, one guest boot.  See BENCHMARKS.md.
bench-compare:
	$(Q)BASE="$(BASE)" $(SCRIPTS)/bench-compare.sh

# tests/model/lease.pml under spin (tests/model/run.sh prints the verdicts).
model:
	$(Q)$(TESTS)/model/run.sh

style: ksrc
	$(Q)$(TESTS)/style/run.sh

sparse: deps
	$(Q)$(TESTS)/sparse/run.sh

unit: ksrc
	$(Q)$(TESTS)/unit/run.sh

fuzz: deps
	$(Q)$(TESTS)/fuzz/run.sh

# The lease engine's deterministic simulator (tests/sim/; needs only a C compiler).
sim:
	$(Q)SIM_FLAVOR=$(FLAVOR) $(TESTS)/sim/run.sh $(if $(SEED),$(SEED),search)

# Command-line variables (DESTDIR, PREFIX, ...) reach userspace/Makefile
# through MAKEFLAGS; PREFIX ?= /usr above is the module's and is not passed.
userspace:
	$(Q)$(MAKE) -C userspace

install-userspace:
	$(Q)$(MAKE) -C userspace install

uninstall-userspace:
	$(Q)$(MAKE) -C userspace uninstall

# The files of packaging/ into $(DESTDIR): units with @SBINDIR@, @BINDIR@
# and @SYSCONFDIR@ filled in; the modprobe.d example only when there is no
# such file yet (it is the administrator's).  Then, on a live host:
# systemd-sysusers; systemd-tmpfiles --create snowflake.conf;
# udevadm control --reload; systemctl daemon-reload.
install-packaging:
	$(Q)install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(UDEVRULESDIR) $(DESTDIR)$(MODULESLOADDIR) \
		$(DESTDIR)$(MODPROBEDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(TMPFILESDIR) $(DESTDIR)$(CDIDIR)
	$(Q)for u in $(UNITS); do \
		sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@BINDIR@|$(BINDIR)|g' \
			-e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' packaging/systemd/$$u >$(DESTDIR)$(UNITDIR)/$$u.tmp && \
		chmod 0644 $(DESTDIR)$(UNITDIR)/$$u.tmp && \
		mv $(DESTDIR)$(UNITDIR)/$$u.tmp $(DESTDIR)$(UNITDIR)/$$u || exit 1; \
	done
	$(Q)install -m 0644 packaging/udev/60-snowflake.rules $(DESTDIR)$(UDEVRULESDIR)/60-snowflake.rules
	$(Q)install -m 0644 packaging/modules-load.d/snowflake.conf $(DESTDIR)$(MODULESLOADDIR)/snowflake.conf
	$(Q)install -m 0644 packaging/sysusers.d/snowflake.conf $(DESTDIR)$(SYSUSERSDIR)/snowflake.conf
	$(Q)install -m 0644 packaging/tmpfiles.d/snowflake.conf $(DESTDIR)$(TMPFILESDIR)/snowflake.conf
	$(Q)install -m 0644 packaging/cdi/snowflake.yaml $(DESTDIR)$(CDIDIR)/snowflake.yaml
	$(Q)if [ -e $(DESTDIR)$(MODPROBEDIR)/snowflake.conf ]; then \
		echo "keeping $(DESTDIR)$(MODPROBEDIR)/snowflake.conf (example: packaging/modprobe.d/snowflake.conf)"; \
	else \
		install -m 0644 packaging/modprobe.d/snowflake.conf $(DESTDIR)$(MODPROBEDIR)/snowflake.conf; \
	fi

# Removes what install-packaging put there; the modprobe.d file only when it
# is still the unchanged example.
uninstall-packaging:
	$(Q)for u in $(UNITS); do rm -f $(DESTDIR)$(UNITDIR)/$$u; done
	$(Q)rm -f $(DESTDIR)$(UDEVRULESDIR)/60-snowflake.rules \
		$(DESTDIR)$(MODULESLOADDIR)/snowflake.conf $(DESTDIR)$(SYSUSERSDIR)/snowflake.conf \
		$(DESTDIR)$(TMPFILESDIR)/snowflake.conf $(DESTDIR)$(CDIDIR)/snowflake.yaml
	$(Q)if cmp -s packaging/modprobe.d/snowflake.conf $(DESTDIR)$(MODPROBEDIR)/snowflake.conf; then \
		rm -f $(DESTDIR)$(MODPROBEDIR)/snowflake.conf; fi

# The module's sources as DKMS wants them: $(DESTDIR)/usr/src/snowflake-VERSION/
# with dkms.conf, Kbuild, driver/ and uapi/.
dkms-src:
	$(Q)rm -rf $(DESTDIR)$(DKMS_SRC)
	$(Q)install -d $(DESTDIR)$(DKMS_SRC)/driver $(DESTDIR)$(DKMS_SRC)/uapi/linux
	$(Q)install -m 0644 Kbuild $(DESTDIR)$(DKMS_SRC)/Kbuild
	$(Q)install -m 0644 VERSION $(DESTDIR)$(DKMS_SRC)/VERSION
	$(Q)install -m 0644 driver/*.c driver/*.h $(DESTDIR)$(DKMS_SRC)/driver/
	$(Q)install -m 0644 uapi/linux/snowflake.h $(DESTDIR)$(DKMS_SRC)/uapi/linux/
	$(Q)sed 's|@VERSION@|$(VERSION)|g' packaging/dkms/dkms.conf.in >$(DESTDIR)$(DKMS_SRC)/dkms.conf

# DKMS builds the module for every installed kernel, and again for each new
# one.  Replaces an earlier registration of the same version.
dkms-install: dkms-src
	$(Q)if $(DKMS) status -m snowflake -v $(VERSION) | grep -q .; then \
		$(DKMS) remove snowflake/$(VERSION) --all; fi
	$(Q)$(DKMS) add snowflake/$(VERSION)
	$(Q)$(DKMS) build snowflake/$(VERSION) -k $(KERNELRELEASE)
	$(Q)$(DKMS) install snowflake/$(VERSION) -k $(KERNELRELEASE)

dkms-uninstall:
	$(Q)if $(DKMS) status -m snowflake -v $(VERSION) | grep -q .; then \
		$(DKMS) remove snowflake/$(VERSION) --all; fi
	$(Q)rm -rf $(DKMS_SRC)

# Upstream churn seen early: the module against the newest kernel headers
# of the mirror (tests/kernels/run.sh, KERNELS_NEWEST=1).
kernels-check:
	$(Q)KERNELS_NEWEST=1 $(TESTS)/kernels/run.sh

# The restart proof of snowflake-floord(8) (QEMU guests with a disk).
restart:
	$(Q)$(TESTS)/restart/run.sh

help:
	@sed -n '3,/^$$/s/^# \{0,1\}//p' $(firstword $(MAKEFILE_LIST))

.PHONY: all module install clean distclean deps ksrc check run vmtest deb debug-kernel bench bench-compare model style sparse unit fuzz sim \
	userspace install-userspace uninstall-userspace install-packaging uninstall-packaging \
	dkms-src dkms-install dkms-uninstall restart kernels-check help
