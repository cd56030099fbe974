# The simulator and its workloads (see tools/sim/simgpu.h): build/sim/libcuda.so.1 and
# build/sim/libnccl.so.2, stand-ins for the CUDA driver and NCCL; build/simtrain, a
# training loop on them; build/simlaunch, a torchrun-like launcher.

SIMGPU_SRC  := tools/sim/simgpu_api.c tools/sim/simgpu_stream.c tools/sim/simgpu_model.c tools/sim/simgpu_occupancy.c \
               tools/sim/simgpu_truth.c tools/sim/simgpu_procaddr.c tools/sim/simgpu_version.c tools/sim/simgpu_vmm.c \
               tools/sim/simgpu_graph.c
SIMNCCL_SRC := tools/sim/simnccl.c tools/sim/simnccl_shm.c tools/sim/simnccl_port.c tools/sim/simnccl_async.c
SIMGPU_OBJ  := $(SIMGPU_SRC:%.c=$(BUILD)/obj/%.o)
SIMNCCL_OBJ := $(SIMNCCL_SRC:%.c=$(BUILD)/obj/%.o)

# cuda.h and nccl.h are not written for these warnings (nccl.h pulls in the CUDA
# runtime's C++-minded headers): read them as system headers.
$(BUILD)/obj/tools/%.o: RS_CFLAGS += -isystem $(CUDA_HOME)/include
# libcuda exports what it marks SIM_EXPORT; libnccl's version script does its part.
$(SIMGPU_OBJ): RS_CFLAGS += -fvisibility=hidden

all: $(BUILD)/sim/libcuda.so.1 $(BUILD)/sim/libnccl.so.2 $(BUILD)/simtrain $(BUILD)/simlaunch

$(BUILD)/sim/libcuda.so.1: $(SIMGPU_OBJ) tools/sim/libcuda.map
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -shared -Wl,-soname,libcuda.so.1 -Wl,--version-script=tools/sim/libcuda.map -Wl,-z,defs \
	    -o $@ $(SIMGPU_OBJ) $(RS_LDFLAGS)
	$(Q)ln -sf libcuda.so.1 $(@D)/libcuda.so

# libnccl finds libcuda.so.1 next to itself.
$(BUILD)/sim/libnccl.so.2: $(SIMNCCL_OBJ) tools/sim/libnccl.map $(BUILD)/sim/libcuda.so.1
	$(call say,LD,$@)
	$(Q)$(CC) -shared -Wl,-soname,libnccl.so.2 -Wl,--version-script=tools/sim/libnccl.map -Wl,-z,defs \
	    -Wl,-rpath,'$$ORIGIN' -o $@ $(SIMNCCL_OBJ) $(BUILD)/sim/libcuda.so.1 $(RS_LDFLAGS)
	$(Q)ln -sf libnccl.so.2 $(@D)/libnccl.so

# The stand-in libnvidia-ml.so.1 (tools/sim/simnvml.c): NVML's answers from the
# simulated GPU's model; it exports only NVML's names.
all: $(BUILD)/sim/libnvidia-ml.so.1
$(BUILD)/obj/tools/sim/simnvml.o: RS_CFLAGS += -fvisibility=hidden
$(BUILD)/sim/libnvidia-ml.so.1: $(BUILD)/obj/tools/sim/simnvml.o
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -shared -Wl,-soname,libnvidia-ml.so.1 -Wl,-z,defs -o $@ $< -ldl $(RS_LDFLAGS)

# simtrain dlopens libcuda.so.1 and links libnccl.so.2, both found in sim/ next to it.
$(BUILD)/simtrain: $(BUILD)/obj/tools/sim/simtrain.o $(BUILD)/sim/libnccl.so.2
	$(call say,LD,$@)
	$(Q)$(CC) -o $@ $(BUILD)/obj/tools/sim/simtrain.o -Wl,-rpath,'$$ORIGIN/sim' \
	    $(BUILD)/sim/libnccl.so.2 -ldl $(RS_LDFLAGS)

$(BUILD)/simlaunch: $(BUILD)/obj/tools/sim/simlaunch.o
	$(call say,LD,$@)
	$(Q)$(CC) -o $@ $< $(RS_LDFLAGS)
