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
endif

# ---- tests/ ----
RUNTIME_TEST_SRC := $(wildcard tests/runtime/*_test.cpp)
RUNTIME_TEST_OBJ := $(RUNTIME_TEST_SRC:%.cpp=$(OBJ)/%.o)
RUNTIME_TESTS := $(BIN)/runtime_tests

$(RUNTIME_TESTS): $(RUNTIME_TEST_OBJ) $(RUNTIME_LIB)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(LDFLAGS) -o $@ $(RUNTIME_TEST_OBJ) $(RUNTIME_LIB) $(RUNTIME_LIBS) -lgtest -lgtest_main

# ---- bench ----
BENCH_SRC := $(wildcard bench/*.cpp)
BENCH_BIN := $(BENCH_SRC:bench/%.cpp=$(BIN)/%)

$(BIN)/%: $(OBJ)/bench/%.o $(RUNTIME_LIB)
	@mkdir -p $(@D)
	$(call msg,LINK,$@)
	$(Q)$(CXX) $(LDFLAGS) -o $@ $< $(RUNTIME_LIB) $(RUNTIME_LIBS)

# ---- compile ----
$(OBJ)/%.o: %.cpp
	@mkdir -p $(@D)
	$(call msg,CXX,$<)
	$(Q)$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c -o $@ $<

ALL := $(RUNTIME_LIB) $(RUNTIME_TESTS) $(BENCH_BIN)

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
