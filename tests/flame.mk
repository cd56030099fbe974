# The flame graph tests' trace writer: hand-made Module, Stack and Sample
# records through formats/ (tests/integration/test_flame.py uses it).
$(BUILD)/tests/flame_mktrace: tests/tools/flame_mktrace.c $(FORMAT_OBJ)
	$(call say,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(RS_CFLAGS) -o $@ $< $(FORMAT_OBJ) $(RS_LDFLAGS) -llz4
TEST_EXTRA += $(BUILD)/tests/flame_mktrace
test-build: $(BUILD)/tests/flame_mktrace
