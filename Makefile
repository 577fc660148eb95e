# Two commands for a fresh machine: `make report` and `make test`.
# The virtual environment is created on first use and reused while pyproject.toml is unchanged.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
ARGS ?=
# make docs: the results.json the site's report is rendered from (a saved run; e.g.
# build/results.json after make report) and the report page's title.
DOCS_RESULTS ?= tests/fixtures/cpu_results.json
DOCS_TITLE ?= Example report

.PHONY: report test docs lint typecheck browser clean-venv

report: $(VENV)/.installed-report
	$(PY) generate.py $(ARGS)

test: $(VENV)/.installed-test browser
	$(PY) -m ruff check .
	$(PY) -m mypy
	@# pytest exits 5 when it collects no test: that is a broken suite, not a pass.
	$(PY) -m pytest -q $(ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi; exit $$rc

# The docs site: render the report from DOCS_RESULTS (exit 3, some measurement not available,
# still renders), copy its Markdown and figures into docs/report/ and build the site with
# mkdocs --strict into build/site/.
docs: $(VENV)/.installed-test
	$(PY) generate.py --from-json $(DOCS_RESULTS) --out build/docs-report --title "$(DOCS_TITLE)" \
	  || [ $$? -eq 3 ]
	rm -rf docs/report
	mkdir -p docs/report
	cp -R build/docs-report/report.md build/docs-report/figures docs/report/
	$(PY) -m mkdocs build --strict

$(VENV)/.created:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	touch $@

$(VENV)/.installed-report: pyproject.toml $(VENV)/.created
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.created
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@ $(VENV)/.installed-report

# The browser tests need Debian's chromium; install it when missing and we are allowed to.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	      || echo "chromium could not be installed: the browser tests will be skipped"; \
	  else echo "chromium is not installed: the browser tests will be skipped"; fi; }

clean-venv:
	rm -rf $(VENV)
