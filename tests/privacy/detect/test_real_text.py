"""Issue 38's layers for real user text, per family and per profile, through the real detector (spaCy NER, the
given-name list): what each finds, the segment it masks, and the false positives fixed while writing them."""

from __future__ import annotations

import pytest

from gateway.state.sessions import MemorySessionStore
from privacy.detect import Target, rules_of
from privacy.detect.realtext import shared_realtext
from privacy.factory import build_detector, build_privacy_protector
from privacy.settings import PrivacySettings


@pytest.fixture(scope="module")
def detector():
    return build_detector(PrivacySettings())


def found(detector, text: str, profile: str = "balanced") -> dict[str, str]:
    return {f.value: f.type for f in detector.detect([Target(text)], None, scope="t", profile=profile)[0]}


async def _sent(text: str, profile: str = "balanced") -> str:
    protector = build_privacy_protector(PrivacySettings(), database_url=None, sessions=MemorySessionStore())
    body = {"model": "m", "messages": [{"role": "user", "content": text}]}
    return (await protector.scrub(body, session_id="s", profile=profile)).body["messages"][0]["content"]


async def test_a_paths_user_segment_is_masked_and_the_rest_of_the_path_kept():
    sent = await _sent('File "C:\\Users\\Kateryna Shevchenko\\Desktop\\my project\\bot.py", line 8\n'
                       "cron: /home/dmitri/scripts/backup.sh >> /home/dmitri/logs/backup.log")
    assert "Kateryna" not in sent and "dmitri" not in sent
    assert "\\Desktop\\my project\\bot.py" in sent and "/scripts/backup.sh" in sent and "C:\\Users\\[" in sent


def test_profile_urls_handles_app_ids_and_personal_sites(detector):
    text = ("remote: Permission to lucasferreira93/tcc.git denied. clone https://github.com/lucasferreira93/tcc "
            "see linkedin.com/in/marekdvorak88 and thanks @kpetrova. package name com.danielakim.budgettracker, "
            "my site is lukasbrenner.dev")
    got = found(detector, text)
    assert got["lucasferreira93"] == "USERNAME" and got["marekdvorak88"] == "USERNAME"
    assert got["kpetrova"] == "USERNAME" and got["danielakim"] == "APP_ID" and got["lukasbrenner.dev"] == "URL"


def test_code_is_not_a_link(detector):
    text = ('@app.route("/")\nimport com.fasterxml.jackson.databind.ObjectMapper\n'
            'resp = requests.get("https://zhangwei-blog.cn/api") in main.py; self.app.run()')
    got = found(detector, text)
    assert got.get("zhangwei-blog.cn") == "URL"  # a blog's domain counts
    assert not {"app", "fasterxml.jackson.databind", "self.app", "main.py"} & set(got)  # the code around it not


def test_a_persons_identifiers_by_context_and_references_by_shape_in_strict(detector):
    text = ("my student number is ab123456, booking reference 4821.553.901, card ending 0092, PNR QX7R2M, "
            "工号 HW00571283，尾号6621; cost centre CC-7712, order #ES-558120, ref HL8823917")
    personal = {"ab123456", "4821.553.901", "0092", "QX7R2M", "HW00571283", "6621"}
    references = {"CC-7712", "ES-558120", "HL8823917"}
    balanced, strict = found(detector, text), found(detector, text, "strict")
    assert personal <= set(balanced) and not {"CC-7712", "ES-558120"} & set(balanced)
    assert balanced["ab123456"] == "ID_NUMBER"
    assert personal | references <= set(strict)


def test_public_references_dates_and_versions_are_no_identifiers(detector):
    got = found(detector, "see CVE-2024-1234 and SHA256 on an RTX4090; # 2024-05-02 order by date, python 3.10.4, "
                          "license: Apache-2.0, ref 16f144d0cdff", "strict")
    assert not {"CVE-2024-1234", "SHA256", "RTX4090", "2024-05-02", "3.10.4", "Apache-2.0", "16f144d0cdff"} & set(got)


def test_people_by_one_name_and_lower_case(detector):
    got = found(detector, "can u ask Priya about it? Tomas said no. my son Leo has a cold, my friend marcus "
                          "too. my GP is dr. harrow, therapist (Joanne). 我室友阿杰天天打游戏，和 Jason 一起")
    assert {"Priya", "Tomas", "Leo", "marcus", "harrow", "Joanne", "阿杰", "Jason"} <= set(got)
    assert all(got[name] == "PERSON" for name in ("Priya", "marcus", "harrow", "阿杰"))


def test_a_given_name_alone_counts_in_strict_only():
    layers = shared_realtext()
    text = "try the Rosa recipes"

    def names(profile: str, text: str = text) -> set[str]:
        return {f.value for f in layers.find(text, rules_of(profile)) if f.type == "PERSON"}

    assert names("balanced") == set() and names("strict") == {"Rosa"}
    assert names("balanced", "Rosa said these recipes are hers") == {"Rosa"}  # a verb after it is an anchor


def test_first_person_organisations_and_places(detector):
    got = found(detector, "i worked at tesco bank in edinburgh. UX designer, Allegro (2020-now). "
                          "we stayed at Casa Lucia in Sintra. 我在深圳工作，毕业于浙江大学")
    assert {"tesco bank", "Allegro", "深圳", "浙江大学"} <= set(got)
    assert got["tesco bank"] == "ORGANIZATION" and got["深圳"] == "LOCATION"


def test_working_at_home_is_no_organisation(detector):
    assert found(detector, "I work at home on weekends and studied at night") == {}


def test_special_categories(detector):
    got = found(detector, "I was diagnosed with type 2 diabetes, take metformin and im pregnant. I'm Turkish, "
                          "a Catholic, a Labour Party member, and gay. the Croats. 医生说我有抑郁症，开了舍曲林")
    assert got["type 2 diabetes"] == got["metformin"] == got["pregnant"] == got["抑郁症"] == "HEALTH"
    assert got["Turkish"] == got["Croats"] == "NRP" and got["Catholic"] == "RELIGION"
    assert got["Labour Party"] == "POLITICAL_OPINION" and got["gay"] == "SEXUAL_ORIENTATION"


def test_a_language_or_a_cuisine_is_no_group_outside_strict(detector):
    text = "translate this to English and suggest Japanese food; hearing aids; democratic values"
    assert not {"English", "Japanese", "aids", "democratic"} & set(found(detector, text))
    strict = found(detector, text, "strict")
    assert strict.get("Japanese") == "NRP" and "English" not in strict  # after "to": the language


def test_minimal_finds_none_of_them(detector):
    text = "my son Leo has ADHD; /home/dmitri/x; student number ab123456; I work at Tesco Bank"
    assert found(detector, text, "minimal") == {}
