# Thin wrapper: everything real lives in CMake and scripts/.
BUILD ?= build
BUILD_TYPE ?= RelWithDebInfo
SANITIZE ?= OFF
JOBS ?= $(shell nproc)
DATA ?= ./data
PORT ?= 5984

.PHONY: all setup build run test fuzz bench clean format deb

all: build

setup:
	@bash scripts/setup.sh

$(BUILD)/CMakeCache.txt: | setup
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DSETTEE_SANITIZE=$(SANITIZE)

build: setup $(BUILD)/CMakeCache.txt
	cd $(BUILD) && $(MAKE) --no-print-directory -j$(JOBS)

# Builds only the server (`make build` builds everything: tests, tools, benchmarks).
run: setup $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) --target settee -j$(JOBS)
	$(BUILD)/settee --data-dir $(DATA) --port $(PORT)

test: build
	@SETTEE_TOOLS=$(BUILD)/tools bash scripts/setup.sh --tests
	cd $(BUILD) && ctest --output-on-failure -j2 -LE fuzz

# The 1,000,000-request fuzz run (not part of `make test`; FUZZ_SEED=N replays one).
fuzz: build
	cd $(BUILD) && ctest --output-on-failure -L fuzz

bench: build
	bash bench/run_foundation.sh

# settee_<version>_<arch>.deb in $(BUILD) (scripts/make_deb.sh; issue 12).
deb: build
	bash scripts/make_deb.sh $(BUILD)

clean:
	rm -rf $(BUILD)

format:
	clang-format -i $$(git ls-files --cached --others --exclude-standard '*.cpp' '*.hpp')
