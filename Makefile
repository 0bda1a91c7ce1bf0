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
#   LTO=0           no link-time optimisation (faster builds while developing)

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
else ifneq ($(LTO),0)
  # Link-time optimisation lets the fiber switch path (drain -> run -> resume -> jump, and
  # yield -> switch_out) inline across files: it is most of the cost of a yield otherwise.
  CXXFLAGS += -flto=auto
  LDFLAGS  += -flto=auto $(OPT)
  AR := gcc-ar
endif

Q := $(if $(V),,@)
msg = $(if $(V),,@printf '  %-8s %s\n' "$(1)" "$(2)";)

# One rule per kind, from two defines: `archive NAME,SOURCES` makes $(NAME_LIB) from the .cpp
# files it is given; `gtest NAME,SOURCES,LIBS,ORDER-ONLY` links $(BIN)/NAME_tests.
define archive
$(1)_SRC := $(2)
$(1)_OBJ := $$($(1)_SRC:%.cpp=$$(OBJ)/%.o)
$(1)_LIB := $$(BUILD)/lib/lib$(3).a
OBJS += $$($(1)_OBJ)
$$($(1)_LIB): $$($(1)_OBJ)
	@mkdir -p $$(@D)
	$$(call msg,AR,$$@)
	$$(Q)rm -f $$@ && $$(AR) rcs $$@ $$^
endef

define gtest
$(1)_TEST_SRC := $$(wildcard $(2))
$(1)_TEST_OBJ := $$($(1)_TEST_SRC:%.cpp=$$(OBJ)/%.o)
OBJS += $$($(1)_TEST_OBJ)
$$(BIN)/$(1)_tests: $$($(1)_TEST_OBJ) $(3) | $(4)
	@mkdir -p $$(@D)
	$$(call msg,LINK,$$@)
	$$(Q)$$(CXX) $$(LDFLAGS) -o $$@ $$($(1)_TEST_OBJ) $(3) $(5) -lgtest -lgtest_main
TESTS += $$(if $$($(1)_TEST_SRC),$$(BIN)/$(1)_tests)
endef

# ---- runtime/: libplatoon-runtime.a ----
$(eval $(call archive,RUNTIME,$(wildcard runtime/*.cpp),platoon-runtime))
RUNTIME_LIBS := -lboost_context -levent_core -levent_pthreads

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

$(eval $(call archive,SERVER_COMMON,$(wildcard server/common/*.cpp),platoon-server-common))
$(SERVER_COMMON_LIB): $(LLHTTP_OBJ)
$(OBJ)/server/%.o: CPPFLAGS += -I/usr/share/include/llhttp
$(OBJ)/tests/server/%.o: CPPFLAGS += -I/usr/share/include/llhttp

define server_program
$(1)_SRC := $$(wildcard server/$(2)/*.cpp)
$(1)_OBJ := $$($(1)_SRC:%.cpp=$$(OBJ)/%.o)
OBJS += $$($(1)_OBJ)
$$(BIN)/$(1): $$($(1)_OBJ) $$(SERVER_COMMON_LIB) $$(RUNTIME_LIB)
	@mkdir -p $$(@D)
	$$(call msg,LINK,$$@)
	$$(Q)$$(CXX) $$(LDFLAGS) -o $$@ $$($(1)_OBJ) $$(SERVER_COMMON_LIB) $$(RUNTIME_LIB) $$(RUNTIME_LIBS)
SERVER_BINS += $$(if $$($(1)_SRC),$$(BIN)/$(1))
endef
$(eval $(call server_program,platoon-server,handoff))
$(eval $(call server_program,platoon-mock,mock))
$(eval $(call server_program,platoon-load,load))

# ---- bench ----
# Each folder bench/NAME/ is one program, $(BIN)/NAME (bench/runtime_bench/: runtime_bench).
define bench_program
$(1)_BENCH_OBJ := $$(patsubst %.cpp,$$(OBJ)/%.o,$$(wildcard bench/$(1)/*.cpp))
OBJS += $$($(1)_BENCH_OBJ)
$$(BIN)/$(1): $$($(1)_BENCH_OBJ) $$(RUNTIME_LIB)
	@mkdir -p $$(@D)
	$$(call msg,LINK,$$@)
	$$(Q)$$(CXX) $$(LDFLAGS) -o $$@ $$($(1)_BENCH_OBJ) $$(RUNTIME_LIB) $$(RUNTIME_LIBS) $$($(1)_EXTRA_LIBS)
BENCH_BIN += $$(BIN)/$(1)
endef
# hook_floor loads a BPF object and waits for a stop signal as the servers do.
hook_floor_EXTRA_LIBS := $(SERVER_COMMON_LIB) -lbpf -lelf -lz
$(BIN)/hook_floor: $(SERVER_COMMON_LIB)
BENCH_BIN :=
$(foreach b,$(sort $(notdir $(patsubst %/,%,$(dir $(wildcard bench/*/*.cpp))))),$(eval $(call bench_program,$(b))))

# ---- bpf/: CO-RE programs and their skeleton ----
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

$(GEN)/%.bpf.o: bpf/%.bpf.c $(GEN)/vmlinux.h $(wildcard bpf/*.h bpf/programs/*.h) Makefile
	@mkdir -p $(@D)
	$(call msg,BPF,$<)
	$(Q)$(BPF_CLANG) $(BPF_CFLAGS) -c $< -o $@.tmp && llvm-strip -g $@.tmp && mv $@.tmp $@

$(GEN)/%.skel.h: $(GEN)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)bpftool gen skeleton $< > $@.tmp && mv $@.tmp $@

# bench/hook_floor/: a benchmark's BPF object (do-nothing programs on platoon's hooks), embedded
# in its loader by the same skeleton step.
$(GEN)/hook_floor.bpf.o: bench/hook_floor/hook_floor.bpf.c $(GEN)/vmlinux.h Makefile
	@mkdir -p $(@D)
	$(call msg,BPF,$<)
	$(Q)$(BPF_CLANG) $(BPF_CFLAGS) -c $< -o $@.tmp && llvm-strip -g $@.tmp && mv $@.tmp $@
$(OBJ)/bench/hook_floor/main.o: $(GEN)/hook_floor.skel.h

# The skeleton is a prerequisite only of the files that include it.
SKEL_USERS := $(shell grep -rl --include='*.cpp' 'skel\.h"' bpf tests 2>/dev/null)
$(SKEL_USERS:%.cpp=$(OBJ)/%.o): $(BPF_SKELS)

# ---- the snapshot contract (bpf/snapshot/) and its producers (bpf/collectors/) ----
$(eval $(call archive,SNAPSHOT,$(wildcard bpf/snapshot/*.cpp),platoon-snapshot))
$(eval $(call archive,COLLECTORS,$(wildcard bpf/collectors/*.cpp),platoon-collectors))
COLLECTOR_LIBS := -lbpf -lelf -lz

# ---- tui/: the consumers (trace, analysis, outputs, dashboard state) and the platoon command ----
$(eval $(call archive,CONSUMERS,$(wildcard tui/trace/*.cpp tui/analysis/*.cpp tui/outputs/*.cpp tui/metrics/*.cpp tui/dashboard/state/*.cpp),platoon-consumers))
CONSUMERS_LIBS := -lz -lzstd -lfmt

# The program's own parts: the commands, the dashboard's drawing and keys, and the exporter's
# HTTP listener (libevent with OpenSSL, yaml-cpp for its web configuration, libcrypt for bcrypt;
# linked here only).
WEB_LIBS := -levent_openssl -levent -lssl -lcrypto -lyaml-cpp -lcrypt
# The HTML report (tui/outputs/html/) is linked here too: its page, script and chart library
# are inlined into the program at build time (Vega from Debian's libjs-vega), so a report opens
# on a machine without them.
PLATOON_SRC := $(wildcard tui/commands/*.cpp tui/web/*.cpp tui/dashboard/views/*.cpp tui/dashboard/input/*.cpp \
                          tui/outputs/html/*.cpp)
PLATOON_OBJ := $(PLATOON_SRC:%.cpp=$(OBJ)/%.o) $(OBJ)/gen/html_assets.o
# The chart library alone also goes to $(CHART_LIB), for the benchmark comparison page.
HTML_ASSETS := tui/outputs/html/page.html tui/outputs/html/report.css tui/outputs/html/charts.js tui/outputs/html/report.js
VEGA_DIR ?= /usr/share/javascript/vega
CHART_LIB := $(BUILD)/share/chart-lib.js
$(GEN)/html_assets.cpp: tui/outputs/html/embed_assets.py $(HTML_ASSETS) Makefile
	@mkdir -p $(@D) $(dir $(CHART_LIB))
	$(call msg,GEN,$@)
	$(Q)python3 tui/outputs/html/embed_assets.py $(VEGA_DIR) /usr/share/doc/libjs-vega/copyright $@ $(CHART_LIB) $(HTML_ASSETS)
$(OBJ)/gen/html_assets.o: $(GEN)/html_assets.cpp
	@mkdir -p $(@D)
	$(call msg,CXX,$<)
	$(Q)$(CXX) $(CPPFLAGS) $(CXXFLAGS) -O0 -c -o $@ $<
OBJS += $(PLATOON_OBJ)
PLATOON_BIN := $(if $(PLATOON_SRC),$(BIN)/platoon)
PLATOON_LIBS := $(CONSUMERS_LIB) $(COLLECTORS_LIB) $(SNAPSHOT_LIB)
$(BIN)/platoon: $(PLATOON_OBJ) $(PLATOON_LIBS)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(LDFLAGS) -o $@ $(PLATOON_OBJ) $(PLATOON_LIBS) $(COLLECTOR_LIBS) $(CONSUMERS_LIBS) -lncursesw $(WEB_LIBS)

# ---- tests/ ----
$(eval $(call gtest,runtime,tests/runtime/*_test.cpp,$(RUNTIME_LIB),,$(RUNTIME_LIBS)))
# The server tests start the programs from their own directory.
$(eval $(call gtest,server,tests/server/*_test.cpp,$(SERVER_COMMON_LIB) $(RUNTIME_LIB),$(SERVER_BINS),$(RUNTIME_LIBS)))
$(eval $(call gtest,model,tests/model/*_test.cpp,$(PLATOON_LIBS),,$(COLLECTOR_LIBS) $(CONSUMERS_LIBS)))
# Ground-truth tests: real workloads, compared with /proc; they start platoon and the servers.
$(eval $(call gtest,bpf,tests/bpf/*_test.cpp,$(PLATOON_LIBS),$(SERVER_BINS) $(PLATOON_BIN) $(BIN)/drain_stats_bench,$(COLLECTOR_LIBS) $(CONSUMERS_LIBS)))

# ---- make fuzz: libFuzzer targets (clang), tests/fuzz/*_fuzz.cpp, each run FUZZ_SECONDS ----
FUZZ_SECONDS ?= 600
FUZZ_DIR := build/fuzz
FUZZ_SRC := $(wildcard tests/fuzz/*_fuzz.cpp)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.cpp=$(FUZZ_DIR)/%)
FUZZ_CXXFLAGS := $(CXXSTD) -O1 -g -I. -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
                 -fsanitize-recover=pointer-overflow  # see tests/fuzz/ubsan.supp
FUZZ_INPUTS := $(CONSUMERS_SRC) $(SNAPSHOT_SRC)
$(FUZZ_DIR)/%: tests/fuzz/%.cpp $(FUZZ_INPUTS) $(wildcard bpf/snapshot/*.hpp tui/*/*.hpp) bpf/platoon.h Makefile
	@mkdir -p $(@D)
	$(call msg,FUZZ,$@)
	$(Q)clang++ $(FUZZ_CXXFLAGS) -o $@ $< $(FUZZ_INPUTS) $(CONSUMERS_LIBS)

# The HTTP request fuzzer drives the exporter's listener (tui/web/) and its libraries too.
WEB_SRC := $(wildcard tui/web/*.cpp)
$(FUZZ_DIR)/http_request_fuzz: tests/fuzz/http_request_fuzz.cpp $(WEB_SRC) $(wildcard tui/web/*.hpp) Makefile
	@mkdir -p $(@D)
	$(call msg,FUZZ,$@)
	$(Q)clang++ $(FUZZ_CXXFLAGS) -o $@ $< $(WEB_SRC) $(WEB_LIBS)

# ---- compile ----
$(OBJ)/%.o: %.cpp Makefile
	@mkdir -p $(@D)
	$(call msg,CXX,$<)
	$(Q)$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c -o $@ $<

ALL := $(RUNTIME_LIB) $(BENCH_BIN) $(SERVER_BINS) $(PLATOON_BIN) $(TESTS)

.PHONY: all test bench demo deps clean fuzz install
all: $(ALL)

deps:
	@scripts/install-deps.sh

test: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/run-tests.sh $(BUILD)

bench: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/run-micro-benchmarks.sh $(BUILD)

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

-include $(OBJS:.o=.d)
