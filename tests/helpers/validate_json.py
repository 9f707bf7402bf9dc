#!/usr/bin/python3
# Validates JSON documents against a JSON Schema (draft 2020-12) with Debian's
# python3-jsonschema: the integration tests' check that `clock status` and
# `clock history --format json` keep to packaging/schema/*.schema.json.
#
#   validate_json.py SCHEMA DOCUMENT...
#
# Exit 0 if every document is valid; 1 with one line per error (file, JSON
# path, message) if not; 2 if the schema itself is not a valid schema or the
# validator is missing. Run it with /usr/bin/python3: a pyenv or venv python
# on PATH does not see Debian's python3-jsonschema.
import json
import sys

try:
    import jsonschema
except ImportError:
    sys.exit("validate_json: needs python3-jsonschema (apt-get install python3-jsonschema; "
             "run with /usr/bin/python3)")


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__ or "usage: validate_json.py SCHEMA DOCUMENT...", file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    validator_class = jsonschema.validators.validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as error:
        print(f"{sys.argv[1]}: not a valid schema: {error.message}", file=sys.stderr)
        return 2
    # FormatChecker: "format": "date-time" is checked where the validator can
    # (rfc3339-validator); the schemas also give a pattern for every time.
    validator = validator_class(schema, format_checker=jsonschema.FormatChecker())
    errors = 0
    for path in sys.argv[2:]:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
        for error in sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path)):
            errors += 1
            print(f"{path}: {error.json_path}: {error.message}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
