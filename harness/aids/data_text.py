"""Rule data: the units the other rules count in (words, terms, quotes, technical tokens, nicks).

Data only: each entry says what it decides and why (the engine is :mod:`harness.aids.rules`).
These were three word regexes, three technical-token regexes and three quoted-text regexes
spread over the bounds, the user checks and the fix terms; the merges and what they changed
are in docs/rules.md.
"""
from __future__ import annotations

from harness.aids.rules import Limit, Rule, RuleSet

TEXT = RuleSet("text-units", [
    Rule(id="word.utterance", pattern=r"[A-Za-z0-9][A-Za-z0-9._/+'-]*", flags="",
         decides="what a word is when two short messages are compared word for word, or a reply "
                 "is checked for being only an acknowledgement",
         why="a one-letter 'k' and a contraction 'don't' are whole words of a short reply, so the "
             "acknowledgement check ('ok', 'k', 'thx') and the exact-repeat check need them"),
    Rule(id="word.term", pattern=r"[A-Za-z0-9~][A-Za-z0-9._/+~-]*[A-Za-z0-9]", flags="",
         decides="what a term is: the words a leak, a copy or a fix term is counted in",
         why="one tokenizer for the user checks and the fix terms (they differed only in '~'): "
             "'~/.ssh/authorized_keys' is one term of a fix, not '.ssh/authorized_keys'"),
    Rule(id="word.plain", pattern=r"[a-z0-9']+", flags="",
         decides="the words of lowercased text when a draft is compared with the simulator's "
                 "own instructions",
         why="the instructions are compared as plain lowercase words with apostrophes kept, so "
             "'don't' in the note and in a copied sentence are the same word"),
    Rule(id="term.technical", pattern=r"[0-9._/+~-]", flags="",
         decides="a term is technical (a version, path, package or command): a leak of one is "
                 "enough, and a fix term needs no vocabulary check",
         why="ntfs-3g, services.msc and ~/.ssh/authorized_keys are technical by a digit, dot, "
             "slash or dash; the user checks' camelCase alternative never fired (terms are "
             "lowercased first) and is gone"),
    Rule(id="address.nick", pattern=r"^\s*([^\s:,]{2,30})[:,]\s", flags="m",
         decides="a word that starts a line as an address ('keanu: try ...') is an IRC nick, "
                 "not part of what the message says",
         why="the asker's nick counted as a term of every real #ubuntu fix, and a helper's "
             "'Dr_Willis: when I do ...' read as output before nicks were removed"),
], limits=[
    Limit(id="copied.min_words", value=8,
          decides="a message under this many words copies nothing (copied_fraction is 0)",
          why="short replies ('it still fails', 'same error') repeat words by nature"),
    Limit(id="copied.min_run", value=4,
          decides="the shortest run of words counted as copied (unless a caller names another)",
          why="three common words in a row ('i tried that') happen by chance; four rarely do"),
])

QUOTED = RuleSet("quoted", [
    Rule(id="quoted.single", pattern=r"(?<![A-Za-z0-9])'[^'\n]{3,200}'(?![A-Za-z0-9])",
         decides="text in single quotes: an output the user cites (helpfulness floor 5), words "
                 "that are not the user's own (no negation in them counts)",
         why="'404 Not Found' is a cited message; an apostrophe inside a word is no quote: "
             "\"I don't know, it's weird\" had read as quoting \"t know, it\""),
    Rule(id="quoted.double", pattern=r"\"[^\"\n]{3,200}\"",
         decides="text in double quotes: an output the user cites, words that are not the user's own",
         why="\"Roaming not allowed by server\" is the error cited, and its 'not' negates nothing "
             "the user says"),
    Rule(id="quoted.backtick", pattern=r"`[^`\n]{2,200}`",
         decides="text in backticks: a command or output cited, words that are not the user's own",
         why="a command or output pasted in backticks is cited text, not prose"),
    Rule(id="quoted.curly", pattern=r"“[^”\n]{3,200}”",
         decides="text in typographic double quotes: cited text, as with straight quotes",
         why="messages pasted from a word processor or a phone quote with “...”"),
])

_TECHNICAL = ("a technical token (a version, a path, a package, a command, a model): two distinct ones "
              "outside a question report an output; one in a first question is a detail")
TECHNICAL = RuleSet("technical-tokens", [
    Rule(id="technical.version", pattern=r"(?<![A-Za-z])\d+(?:\.\d+)+", flags="", decides=_TECHNICAL,
         why="a version or address (8.04, 2.6.24, 192.168.1.1) is a detail of the system"),
    Rule(id="technical.number", pattern=r"(?<![A-Za-z])\d{2,}", flags="", decides=_TECHNICAL,
         why="a number of two digits or more (an error code, a size, a line number) comes from the system"),
    Rule(id="technical.path", pattern=r"(?<![A-Za-z])[\w-]*/[\w./-]+", flags="", decides=_TECHNICAL,
         why="a path (/etc/fstab, /dev/sda1) names a file or device"),
    Rule(id="technical.hyphened", pattern=r"(?<![A-Za-z])[a-z]+-[a-z0-9-]+", flags="", decides=_TECHNICAL,
         why="a lowercase hyphened word is a package or command (apt-get, network-manager)"),
    Rule(id="technical.dotted", pattern=r"(?<![A-Za-z])[a-z]+\.[a-z]{2,}", flags="", decides=_TECHNICAL,
         why="a dotted lowercase word is a file or host (xorg.conf, services.msc)"),
    Rule(id="technical.model", pattern=r"\b(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z\d]{4,}\b", flags="",
         decides=_TECHNICAL,
         why="a hardware model mixes letters and digits ('a K7S41Gx mainboard', BCM4312): the "
             "first question that names one gives a detail"),
])

TEXT_SPANS = RuleSet("text-spans", [
    Rule(id="sentence.end", pattern=r"(?:(?<=[.!?])|(?<=[^(][.!?]\)))\s+|(?<=[。！？])|\n+", flags="",
         decides="where a sentence ends: after '.', '!' or '?' (a closing bracket after it kept "
                 "with the sentence) and the spaces after it, after a CJK full stop, or at a line "
                 "break; the simulated user's sentences, the copied-instruction check, the "
                 "bounds' 'only asks' and the manipulation defence's sentence units",
         why="four splitters differed: the simulated user split at every ')' (a remark in brackets "
             "cut a sentence in two), the copied-instruction check never at a bare line break, the "
             "bounds not after 'works.)', and the defence alone knew '。'; 'Never say that it "
             "works.)' ends at its bracket, '(!)' ends nothing"),
    Rule(id="code.span", pattern=r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|`[^`\n]+`", flags="s",
         decides="a code region (a fenced block, closed or running to the end, or inline "
                 "backticks): the defence ignores weak cues in it, language detection reads "
                 "no words in it",
         why="'git pull' in a German message is no English, and 'rate(10)' in pasted code is "
             "no order; an unclosed fence (a message cut short) is code to its end"),
    Rule(id="tag.any", pattern=r"(<|&lt;)(\s*(/?)\s*([A-Za-z]\w*)\b)(\s*>)?",
         decides="an opening or closing tag (or its escaped form): the judge prompts' "
                 "delimiter tags in judged text are escaped, and the defence flags the "
                 "<conversation>/<latest> tags, by the tag's name",
         why="judged text that writes '</latest>' could close the block it sits in; one "
             "pattern for the escaping and the defence, the names of each are data"),
])
"""The spans of text several decisions read: sentences, code, tags (one pattern each)."""
