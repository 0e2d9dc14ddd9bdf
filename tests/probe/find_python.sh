#!/usr/bin/env bash
# Prints the first Python that imports torch: $2 when given (HETPLAN_PROBE_PYTHON), else python3
# on PATH, else /usr/bin/python3. Without one, says on stderr what to install, in the name of the
# test $1, and exits 1.
test_name=$1
candidates=(python3 /usr/bin/python3)
if [ -n "$2" ]
then
  candidates=("$2")
fi
for candidate in "${candidates[@]}"
do
  if "$candidate" -c "import torch" >/dev/null 2>&1
  then
    echo "$candidate"
    exit 0
  fi
done
echo "$test_name FAILED: no Python that imports torch (tried: ${candidates[*]})." >&2
echo "Install it with scripts/install-deps (the Debian package python3-torch)." >&2
exit 1
