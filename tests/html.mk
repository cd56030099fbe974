# The HTML page's test driver: rsr_html_write on a hand-written report.json
# and Kineto timelines (tests/integration/test_html.py runs it).
$(BUILD)/tests/html_driver: tests/tools/html_driver.c $(FORMAT_OBJ) $(REPORTER_LIB_OBJ)
	$(call say,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(RS_CFLAGS) -o $@ $< $(FORMAT_OBJ) $(REPORTER_LIB_OBJ) $(RS_LDFLAGS) $(REPORTER_LIBS)

test-build: $(BUILD)/tests/html_driver

# A generated job with no straggler (tools/bench/gen_job.c, built by tools/bench/bench.mk)
# for test_html and test_report_sim.
test-build: $(BUILD)/gen_job
