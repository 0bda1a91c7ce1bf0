# platoon — one non-recursive Makefile.
#   make            build everything into build/ (binaries in build/bin/)
#   make test       install missing packages, build, run every test
#   make bench      run the benchmarks, figures as JSON under build/bench/
#   make demo       install, build and run the demo
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

# ---- compile ----
$(OBJ)/%.o: %.cpp Makefile
	@mkdir -p $(@D)
	$(call msg,CXX,$<)
	$(Q)$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c -o $@ $<

ALL := $(RUNTIME_LIB) $(RUNTIME_TESTS) $(BENCH_BIN) $(SERVER_BINS) $(SERVER_TESTS)

.PHONY: all test bench demo deps clean
all: $(ALL)

deps:
	@scripts/install-deps.sh

test: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/run-tests.sh $(BUILD)

bench: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/run-bench.sh $(BUILD)

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/demo.sh $(BUILD)

clean:
	rm -rf build

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)
