# The tests of the stack people train with today (docs/testing.md): Python 3.14 and
# PyTorch 2.x from Debian unstable, in a chroot made once by debootstrap
# (tools/scripts/chroot.sh) into $(CHROOT), reported from outside it. `make chroot`
# makes it (a few minutes, about 2 GB; root), `make chroot-refresh` makes it
# anew (or rm -rf it), `make test-modern` runs tests/modern/test_* through
# tests/run.sh (not part of `make test`). CHROOT=DIR uses another one.
CHROOT ?= $(BUILD)/chroot-sid

.PHONY: chroot chroot-refresh test-modern
chroot:
	$(Q)sh tools/scripts/chroot.sh $(CHROOT)

chroot-refresh:
	$(Q)sh tools/scripts/chroot.sh --refresh $(CHROOT)

test-modern: test-deps
	$(Q)$(MAKE) --no-print-directory $(SUB_J) test-build
	$(Q)$(MAKE) --no-print-directory chroot
	$(Q)BUILD=$(BUILD) RINGSIDE_CHROOT=$(abspath $(CHROOT)) sh tests/run.sh --dir tests/modern
