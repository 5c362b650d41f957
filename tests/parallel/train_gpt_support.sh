# What the train_gpt end-to-end tests share (sourced, not run): a small text to train on, the
# training losses out of train_gpt's progress lines, and the check that two runs printed the same.

# write_text FILE LINE: 400 numbered copies of LINE.
write_text() {
  i=0
  while [ $i -lt 400 ]; do echo "$2: $i"; i=$((i + 1)); done > "$1"
}

# training_dir LINE: a fresh temporary directory in $dir, removed when the test exits, holding
# text.txt (write_text of LINE).
training_dir() {
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
  write_text "$dir/text.txt" "$1"
}

# losses: "ITER LOSS" for every progress line on stdin (rank 0's under a launcher).
losses() { sed -n 's/^\(\[rank 0\] \)\{0,1\}iter *\([0-9]*\): loss \([0-9.]*\).*/\2 \3/p'; }

# same_losses NAME_A FILE_A NAME_B FILE_B: both shown, the first not empty, both equal.
same_losses() {
  echo "$1:"; cat "$2"
  echo "$3:"; cat "$4"
  test -s "$2"
  cmp "$2" "$4"
}

# measurements: what a run prints about its model, in order: the evaluations, the training
# losses (as losses prints them), the whole-split loss and the sample (rank 0's under a launcher).
measurements() {
  sed 's/^\[rank 0\] //' | sed -n -e '/^eval iter/p' -e 's/^iter *\([0-9]*\): loss \([0-9.]*\).*/\1 \2/p' \
    -e '/^full val loss/p' -e '/^--- sample/,$p'
}
