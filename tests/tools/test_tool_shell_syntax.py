"""The shell reader behind the approval policy: words, separators, nested code, here-docs."""

from __future__ import annotations

from hermes.agent.safety.shell_syntax import parse


def _words(source: str) -> list[list[list[str]]]:
    return [[[w.text for w in command.words] for command in pipeline] for pipeline in parse(source)]


def test_separators_and_pipes() -> None:
    assert _words("a 1; b && c || d & e | f |& g\nh") == [
        [["a", "1"]], [["b"]], [["c"]], [["d"]], [["e"], ["f"], ["g"]], [["h"]],
    ]


def test_quotes_and_escapes_are_removed() -> None:
    assert _words("""echo 'a b' "c $x" d\\ e 'it'"'"'s'""") == [[["echo", "a b", "c $x", "d e", "it's"]]]


def test_comments_only_at_word_start() -> None:
    assert _words("echo a#b # comment ; rm -rf /") == [[["echo", "a#b"]]]


def test_nested_code_is_kept() -> None:
    [[command]] = parse('echo $(whoami) "`date`" <(ls) $((1+2)) ${HOME}')
    nested = [inner for word in command.words for inner in word.nested]
    assert nested == ["whoami", "date", "ls"]
    assert command.words[-1].text == "${HOME}"


def test_redirections_are_not_words() -> None:
    [[command]] = parse("cmd arg >out 2>>err &>both <in 2>&1")
    assert [w.text for w in command.words] == ["cmd", "arg"]
    assert [(r.op, r.target.text) for r in command.redirects] == [
        (">", "out"), (">>", "err"), ("&>", "both"), ("<", "in"), (">&", "1"),
    ]


def test_heredocs_and_herestrings_feed_stdin() -> None:
    pipelines = parse("cat <<EOF | sh\nline 1\nline 2\nEOF\ncat <<-'X'\n\tbody\n\tX\nbash <<< 'echo hi'")
    assert [[c.stdin_texts for c in p] for p in pipelines] == [[["line 1\nline 2"], []], [["\tbody"]], [["echo hi"]]]


def test_unterminated_input_is_still_read() -> None:
    assert _words("echo 'open") == [[["echo", "open"]]]
    [[command]] = parse("echo $(rm -rf /")
    assert command.words[1].nested == ["rm -rf /"]
