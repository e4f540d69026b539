#!/usr/bin/env bash
# Post the comparison as one pull-request comment, or update the comment an earlier run of
# this action posted on the same pull request (found by its marker, one per run id), so
# that a pull request carries one current table, not one per push. Reads the comparison in
# Markdown ($1, `gpuoverhead compare --markdown`) and GH_TOKEN (with `pull-requests:
# write`), REPO, PR and RUN_ID from the environment; writes through `gh api`.
set -euo pipefail
table="$1"
marker="<!-- gpuoverhead compare: $RUN_ID -->"
body="$(mktemp)"
# The table's rows whose verdict (the last column) says the estimate changed.
changed="$(grep -E '\| (slower|faster|better|worse|higher|lower) +\|$' "$table" || true)"
{
  echo "$marker"
  echo "### gpuoverhead: \`$RUN_ID\` against the baseline"
  echo
  tail -n 1 "$table"  # the verdict counts
  echo
  if [ -n "$changed" ]; then
    printf 'Changed estimates:\n\n'
    head -n 2 "$table"
    echo "$changed"
  else
    echo "No estimate changed significantly."
  fi
  printf '\n<details><summary>All estimates</summary>\n\n'
  sed '$d' "$table" | head -c 50000  # a comment holds at most 65,536 characters
  printf '\n</details>\n'
} > "$body"
id="$(gh api "repos/$REPO/issues/$PR/comments" --paginate \
  --jq ".[] | select(.body | startswith(\"$marker\")) | .id" | head -n 1)"
if [ -n "$id" ]; then
  gh api --method PATCH "repos/$REPO/issues/comments/$id" -F "body=@$body" > /dev/null
else
  gh api --method POST "repos/$REPO/issues/$PR/comments" -F "body=@$body" > /dev/null
fi
