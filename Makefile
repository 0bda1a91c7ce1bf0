# platoon — one non-recursive Makefile.
#   make            build everything into build/ (binaries in build/bin/)
#   make test       install missing packages, build, run every test
#   make bench      run the benchmarks, figures as JSON under build/bench/
#   make demo       install, build and run the demo
#   make fuzz       libFuzzer targets, FUZZ_SECONDS each (default 600)
#   make install    binaries into $(PREFIX)/bin (default /usr/local)
#   SAN=thread|address   build with a sanitizer (into build/san-$(SAN)/)
#   BUILD=dir       build somewhere else (default build/)
#   V=1             show the commands

.DEFAULT_GOAL := all
.DELETE_ON_ERROR:
.SUFFIXES:

SAN ?=
ifeq ($(SAN),)
  BUILD ?= build
else
  BUILD ?= build/san-$(SAN)
endif
BIN := $(BUILD)/bin
OBJ := $(BUILD)/obj

CXX      ?= g++
CXXSTD   := -std=c++20
WARN     := -Wall -Wextra -Wpedantic -Wshadow -Wno-missing-field-initializers
OPT      ?= -O2 -g
CPPFLAGS := -I. -I$(BUILD)/gen -MMD -MP
CXXFLAGS := $(CXXSTD) $(WARN) $(OPT) -pthread -fno-omit-frame-pointer
LDFLAGS  := -pthread
ifneq ($(SAN),)
  CXXFLAGS += -fsanitize=$(SAN)
  LDFLAGS  += -fsanitize=$(SAN)
else
  # Link-time optimisation lets the fiber switch path (drain -> run -> resume -> jump, and
  # yield -> switch_out) inline across files: it is most of the cost of a yield otherwise.
  CXXFLAGS += -flto=auto
  LDFLAGS  += -flto=auto $(OPT)
  AR := gcc-ar
endif

Q := $(if $(V),,@)
msg = $(if $(V),,@printf '  %-8s %s\n' "$(1)" "$(2)";)

# ---- runtime/: libplatoon-runtime.a ----
RUNTIME_SRC := $(wildcard runtime/*.cpp)
RUNTIME_OBJ := $(RUNTIME_SRC:%.cpp=$(OBJ)/%.o)
RUNTIME_LIB := $(BUILD)/lib/libplatoon-runtime.a
RUNTIME_LIBS := -lboost_context -levent_core -levent_pthreads

$(RUNTIME_LIB): $(RUNTIME_OBJ)
	@mkdir -p $(@D)
	$(call msg,AR,$@)
	$(Q)$(AR) rcs $@ $^

# Boost.Context switches stacks under TSan's feet: that one file is built without TSan
# instrumentation and annotates the switches itself (see runtime/context.cpp).
ifeq ($(SAN),thread)
$(OBJ)/runtime/context.o: CXXFLAGS += -fno-sanitize=thread
$(OBJ)/runtime/context.o: CPPFLAGS += -DPLATOON_TSAN_ANNOTATE
endif

# ---- server/: platoon-server, platoon-mock, platoon-load ----
# llhttp: Debian ships its C sources (node-llhttp), not a library; compiled here.
LLHTTP_DIR := /usr/share/llhttp
LLHTTP_OBJ := $(OBJ)/llhttp/llhttp.o $(OBJ)/llhttp/api.o $(OBJ)/llhttp/http.o
CC ?= gcc
$(OBJ)/llhttp/%.o: $(LLHTTP_DIR)/%.c
	@mkdir -p $(@D)
	$(call msg,CC,$<)
	$(Q)$(CC) -O2 -g -fPIC -I/usr/share/include/llhttp $(if $(SAN),-fsanitize=$(SAN)) -c -o $@ $<

SERVER_COMMON_SRC := $(wildcard server/common/*.cpp)
SERVER_COMMON_OBJ := $(SERVER_COMMON_SRC:%.cpp=$(OBJ)/%.o)
SERVER_COMMON_LIB := $(BUILD)/lib/libplatoon-server-common.a
$(SERVER_COMMON_LIB): $(SERVER_COMMON_OBJ) $(LLHTTP_OBJ)
	@mkdir -p $(@D)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^
$(OBJ)/server/%.o: CPPFLAGS += -I/usr/share/include/llhttp
$(OBJ)/tests/server/%.o: CPPFLAGS += -I/usr/share/include/llhttp

define server_program
$(1)_SRC := $$(wildcard server/$(2)/*.cpp)
$(1)_OBJ := $$($(1)_SRC:%.cpp=$$(OBJ)/%.o)
$$(BIN)/$(1): $$($(1)_OBJ) $$(SERVER_COMMON_LIB) $$(RUNTIME_LIB)
	@mkdir -p $$(@D)
	$$(call msg,LINK,$$@)
	$$(Q)$$(CXX) $$(LDFLAGS) -o $$@ $$($(1)_OBJ) $$(SERVER_COMMON_LIB) $$(RUNTIME_LIB) $$(RUNTIME_LIBS)
SERVER_BINS += $$(if $$($(1)_SRC),$$(BIN)/$(1))
endef
$(eval $(call server_program,platoon-server,handoff))
$(eval $(call server_program,platoon-mock,mock))
$(eval $(call server_program,platoon-load,load))

# ---- tests/ ----
RUNTIME_TEST_SRC := $(wildcard tests/runtime/*_test.cpp)
RUNTIME_TEST_OBJ := $(RUNTIME_TEST_SRC:%.cpp=$(OBJ)/%.o)
RUNTIME_TESTS := $(BIN)/runtime_tests

$(RUNTIME_TESTS): $(RUNTIME_TEST_OBJ) $(RUNTIME_LIB)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(LDFLAGS) -o $@ $(RUNTIME_TEST_OBJ) $(RUNTIME_LIB) $(RUNTIME_LIBS) -lgtest -lgtest_main

SERVER_TEST_SRC := $(wildcard tests/server/*_test.cpp)
SERVER_TEST_OBJ := $(SERVER_TEST_SRC:%.cpp=$(OBJ)/%.o)
SERVER_TESTS := $(if $(SERVER_TEST_SRC),$(BIN)/server_tests)
# The server tests start the programs from their own directory.
$(BIN)/server_tests: $(SERVER_TEST_OBJ) $(SERVER_COMMON_LIB) $(RUNTIME_LIB) | $(SERVER_BINS)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(LDFLAGS) -o $@ $(SERVER_TEST_OBJ) $(SERVER_COMMON_LIB) $(RUNTIME_LIB) $(RUNTIME_LIBS) -lgtest -lgtest_main

# ---- bench ----
BENCH_SRC := $(wildcard bench/*.cpp)
BENCH_BIN := $(BENCH_SRC:bench/%.cpp=$(BIN)/%)

$(BENCH_BIN): $(BIN)/%: $(OBJ)/bench/%.o $(RUNTIME_LIB)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(LDFLAGS) -o $@ $< $(RUNTIME_LIB) $(RUNTIME_LIBS)


# ---- bpf/: CO-RE programs, skeletons, the collector (libplatoon-bpf.a) ----
# vmlinux.h is dumped from the running kernel's BTF at build time (CO-RE relocates the field
# offsets at load time, so the programs still run on other BTF kernels); the skeletons come from
# bpftool. usdt.bpf.h needs the multiarch include dir for asm/errno.h.
GEN := $(BUILD)/gen
BPF_CLANG ?= clang
BPF_ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -Wall -Wno-unused-function \
              -I$(GEN) -I. -I/usr/include/$(shell gcc -print-multiarch)
BPF_PROGS := $(wildcard bpf/*.bpf.c)
BPF_SKELS := $(BPF_PROGS:bpf/%.bpf.c=$(GEN)/%.skel.h)

$(GEN)/vmlinux.h:
	@mkdir -p $(@D)
	$(call msg,BTF,$@)
	$(Q)bpftool btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(GEN)/%.bpf.o: bpf/%.bpf.c $(GEN)/vmlinux.h $(wildcard bpf/*.h) Makefile
	@mkdir -p $(@D)
	$(call msg,BPF,$<)
	$(Q)$(BPF_CLANG) $(BPF_CFLAGS) -c $< -o $@.tmp && llvm-strip -g $@.tmp && mv $@.tmp $@

$(GEN)/%.skel.h: $(GEN)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)bpftool gen skeleton $< > $@.tmp && mv $@.tmp $@

BPF_LIB_SRC := $(wildcard bpf/*.cpp)
BPF_LIB_OBJ := $(BPF_LIB_SRC:%.cpp=$(OBJ)/%.o)
BPF_LIB := $(BUILD)/lib/libplatoon-bpf.a
BPF_LIBS := -lbpf -lelf -lz
$(BPF_LIB_OBJ): $(BPF_SKELS)
$(BPF_LIB): $(BPF_LIB_OBJ)
	@mkdir -p $(@D)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# ---- tui/model/: snapshots, windows, trace file, procfs sampler (libplatoon-model.a) ----
MODEL_SRC := $(wildcard tui/model/*.cpp)
MODEL_OBJ := $(MODEL_SRC:%.cpp=$(OBJ)/%.o)
MODEL_LIB := $(BUILD)/lib/libplatoon-model.a
MODEL_LIBS := -lz -lfmt
$(MODEL_LIB): $(MODEL_OBJ)
	@mkdir -p $(@D)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# ---- tui/: the platoon command ----
PLATOON_SRC := $(wildcard tui/*.cpp tui/commands/*.cpp tui/views/*.cpp)
PLATOON_OBJ := $(PLATOON_SRC:%.cpp=$(OBJ)/%.o)
PLATOON_BIN := $(if $(PLATOON_SRC),$(BIN)/platoon)
$(PLATOON_OBJ): $(BPF_SKELS)
$(BIN)/platoon: $(PLATOON_OBJ) $(BPF_LIB) $(MODEL_LIB)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(LDFLAGS) -o $@ $(PLATOON_OBJ) $(BPF_LIB) $(MODEL_LIB) $(BPF_LIBS) $(MODEL_LIBS) -lncursesw -levent

# ---- tests of bpf/ and tui/ ----
MODEL_TEST_SRC := $(wildcard tests/model/*_test.cpp)
MODEL_TEST_OBJ := $(MODEL_TEST_SRC:%.cpp=$(OBJ)/%.o)
MODEL_TESTS := $(if $(MODEL_TEST_SRC),$(BIN)/model_tests)
$(BIN)/model_tests: $(MODEL_TEST_OBJ) $(MODEL_LIB)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(LDFLAGS) -o $@ $(MODEL_TEST_OBJ) $(MODEL_LIB) $(MODEL_LIBS) -lgtest -lgtest_main

# Ground-truth tests: real workloads, compared with /proc; they start platoon and the servers.
BPF_TEST_SRC := $(wildcard tests/bpf/*_test.cpp)
BPF_TEST_OBJ := $(BPF_TEST_SRC:%.cpp=$(OBJ)/%.o)
BPF_TESTS := $(if $(BPF_TEST_SRC),$(BIN)/bpf_tests)
$(BPF_TEST_OBJ): $(BPF_SKELS)
$(BIN)/bpf_tests: $(BPF_TEST_OBJ) $(BPF_LIB) $(MODEL_LIB) | $(SERVER_BINS) $(PLATOON_BIN)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(LDFLAGS) -o $@ $(BPF_TEST_OBJ) $(BPF_LIB) $(MODEL_LIB) $(BPF_LIBS) $(MODEL_LIBS) -lgtest -lgtest_main

# ---- make fuzz: libFuzzer targets (clang), tests/fuzz/*_fuzz.cpp, each run FUZZ_SECONDS ----
FUZZ_SECONDS ?= 600
FUZZ_DIR := build/fuzz
FUZZ_SRC := $(wildcard tests/fuzz/*_fuzz.cpp)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.cpp=$(FUZZ_DIR)/%)
FUZZ_CXXFLAGS := $(CXXSTD) -O1 -g -I. -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
                 -fsanitize-recover=pointer-overflow  # see tests/fuzz/ubsan.supp
$(FUZZ_DIR)/%: tests/fuzz/%.cpp $(MODEL_SRC) $(wildcard tui/model/*.hpp) bpf/platoon.h Makefile
	@mkdir -p $(@D)
	$(call msg,FUZZ,$@)
	$(Q)clang++ $(FUZZ_CXXFLAGS) -o $@ $< $(MODEL_SRC) $(MODEL_LIBS)

# ---- compile ----
$(OBJ)/%.o: %.cpp Makefile
	@mkdir -p $(@D)
	$(call msg,CXX,$<)
	$(Q)$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c -o $@ $<

ALL := $(RUNTIME_LIB) $(RUNTIME_TESTS) $(BENCH_BIN) $(SERVER_BINS) $(SERVER_TESTS) \
       $(PLATOON_BIN) $(MODEL_TESTS) $(BPF_TESTS)

.PHONY: all test bench demo deps clean fuzz install
all: $(ALL)

deps:
	@scripts/install-deps.sh

test: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/run-tests.sh $(BUILD)

bench: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/run-bench.sh $(BUILD)

# The demo builds only what it runs (the four programs), not the tests.
demo: deps
	$(Q)$(MAKE) --no-print-directory $(PLATOON_BIN) $(SERVER_BINS)
	$(Q)scripts/demo.sh $(BUILD)

PREFIX ?= /usr/local
install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(PLATOON_BIN) $(SERVER_BINS) $(DESTDIR)$(PREFIX)/bin/

fuzz: deps $(FUZZ_BIN)
	$(Q)scripts/run-fuzz.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_BIN)

clean:
	rm -rf build

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)
