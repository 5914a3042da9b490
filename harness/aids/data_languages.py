"""Rule data: how a judged message is told to be in another language than English
(``harness.selfscore.languages``, docs/robustness.md, the ``translated`` suite).

Data only (the engine is :mod:`harness.aids.rules`). A message is "not English" when most of its
letters are in another script, or when it has more function words of one of eight other
languages than English ones; code (``code.span``), commands and URLs are left out first.
"""
from __future__ import annotations

from harness.aids.rules import Limit, Rule, RuleSet, WordList

_OTHER = ("function words of {lang}: more of them than English ones (at least "
          "'language.min_words') make a message {lang} (words that are common English too never count)")
_WHY = "the commonest function words and help-desk words of the language ('it works', 'still', 'thanks')"

LANGUAGES = RuleSet("languages", [
    Rule(id="language.not_prose", pattern=r"https?://\S+|\S+[/\\]\S+|\S+@\S+|--?[A-Za-z][\w-]*", flags="",
         decides="URLs, paths, addresses and command flags are left out (with code) before words are counted",
         why="'git pull' or '/etc/fstab' in a German message makes it no English"),
    Rule(id="language.word", pattern=r"[^\W\d_]+", flags="", language="multi",
         decides="what a word is when function words are counted (letters of any script)",
         why="'funktioniert' and 'ñ' are words; digits and underscores are not"),
], word_lists=[
    WordList(id="language.english", words="""the a an and or but is are was were be been am i my me you your it its this
        that these those with without of in on at to for from not no yes what which who how why when where do does
        did done have has had can could will would should please thanks thank after before still now again same
        there here they them we our he she his her if then than so just also only all any some tried try works work
        working worked help problem error""",
             decides="English function words: a message is English unless another language has more",
             why="the commonest English words and help-desk words; a short 'ok' is English"),
    WordList(id="language.german", language="de", decides=_OTHER.format(lang="German"), why=_WHY, words="""der die das
        und ist nicht ich mein meine es ein eine einen mit auf zu den dem des sie wir ihr aber oder wenn dann noch schon
        immer auch nur wie was warum habe hat sind war kann bitte danke jetzt wieder funktioniert geht keine kein"""),
    WordList(id="language.french", language="fr", decides=_OTHER.format(lang="French"), why=_WHY, words="""le la les et
        est pas je mon ma mes une des avec sur pour que qui ne il elle nous vous ils mais ou si encore toujours aussi
        seulement comment pourquoi ai avez sont était peut merci maintenant marche fonctionne aucun ce cette dans du au"""),
    WordList(id="language.spanish", language="es", decides=_OTHER.format(lang="Spanish"), why=_WHY, words="""el la los las
        y es yo mi mis un una con por para que qui él ella nosotros usted pero o si todavía siempre también solo cómo
        qué por qué tengo tiene son era puede gracias ahora funciona sigue ningún del al este esta"""),
    WordList(id="language.italian", language="it", decides=_OTHER.format(lang="Italian"), why=_WHY, words="""il lo la gli
        le e è non io mio mia un una con per che chi lui lei noi voi ma se ancora sempre anche solo come perché ho ha
        sono era può grazie ora funziona nessun del della dei questo questa"""),
    WordList(id="language.portuguese", language="pt", decides=_OTHER.format(lang="Portuguese"), why=_WHY, words="""o a
        os as e é não eu meu minha um uma com por para que ele ela nós você mas ou se ainda sempre também só como
        porque tenho tem são era pode obrigado agora funciona nenhum do da dos das este esta isso"""),
    WordList(id="language.dutch", language="nl", decides=_OTHER.format(lang="Dutch"), why=_WHY, words="""de het een en is
        niet ik mijn met op te voor dat die wij jij hij zij maar of als nog altijd ook alleen hoe waarom heb heeft zijn
        was kan alstublieft bedankt nu werkt geen van"""),
    WordList(id="language.swedish", language="sv", decides=_OTHER.format(lang="Swedish"), why=_WHY, words="""och är inte
        jag min mitt en ett med på till för att som vi du han hon men eller om fortfarande alltid också bara hur varför
        har var kan tack nu fungerar ingen"""),
    WordList(id="language.polish", language="pl", decides=_OTHER.format(lang="Polish"), why=_WHY, words="""i jest nie ja
        mój moja się na do że z w to ale lub czy jeszcze zawsze też tylko jak dlaczego mam ma są był może dziękuję
        teraz działa żaden"""),
], limits=[
    Limit(id="language.latin_share", value=0.5,
          decides="a message whose share of Latin letters (code points below U+0250) is under this is in "
                  "another script",
          why="Chinese, Russian or Arabic text with a Latin command in it is still not English"),
    Limit(id="language.min_words", value=2,
          decides="the fewest function words of another language that make a message that language",
          why="one 'die' or 'la' in an English message is chance"),
])
"""The language detection's rules, word lists and limits."""

#: the other languages, by name, and the id of their word list (in this order: the first with
#: the most function words wins a tie)
OTHER_LANGUAGES = {"German": "language.german", "French": "language.french", "Spanish": "language.spanish",
                   "Italian": "language.italian", "Portuguese": "language.portuguese", "Dutch": "language.dutch",
                   "Swedish": "language.swedish", "Polish": "language.polish"}
