"""The word lists of the special categories (health, religion, political opinion, sexual orientation, nationality
and ethnicity), English and Chinese. Written for this project, not taken from an annotated dataset; read by
``privacy.detect.specials``. Lower case: matching folds case (a proper name's capital is checked there)."""

from __future__ import annotations

# Diagnoses and conditions (a modifier such as ``type 2``, ``early onset``, ``chronic`` is taken along).
CONDITIONS = """diabetes diabetic prediabetes hypertension high_blood_pressure hypotension asthma copd cancer tumour tumor
leukemia leukaemia lymphoma melanoma carcinoma chemotherapy chemo radiotherapy dementia alzheimer's alzheimers
parkinson's parkinsons epilepsy epileptic seizures stroke heart_attack heart_failure arrhythmia atrial_fibrillation
angina depression depressed clinical_depression  generalized_anxiety anxiety panic_disorder panic_attacks
bipolar bipolar_disorder schizophrenia schizophrenic psychosis ptsd ocd adhd  autism autistic asperger's aspergers
anorexia bulimia eating_disorder insomnia sleep_apnea sleep_apnoea migraine migraines endometriosis pcos fibroids
infertility infertile miscarriage stillbirth ectopic_pregnancy pregnant pregnancy trimester ivf morning_sickness
postpartum_depression hiv hiv_positive aids hepatitis hepatitis_b hepatitis_c tuberculosis chlamydia gonorrhea
syphilis herpes hpv  sti multiple_sclerosis  lupus crohn's crohns colitis ibs celiac coeliac arthritis
rheumatoid_arthritis osteoporosis fibromyalgia chronic_fatigue long_covid covid-19 covid flu influenza pneumonia
bronchitis kidney_disease kidney_failure dialysis liver_disease cirrhosis hypothyroidism hyperthyroidism thyroid
gout psoriasis eczema dyslexia dyspraxia down_syndrome cerebral_palsy tourette's tourettes alcoholism alcoholic
addiction substance_abuse opioid_addiction self-harm suicidal eating_disorders concussion glaucoma cataracts
macular_degeneration hearing_loss tinnitus sciatica scoliosis hernia appendicitis gallstones kidney_stones
anemia anaemia sickle_cell thalassemia hemophilia haemophilia cystic_fibrosis muscular_dystrophy
erectile_dysfunction menopause perimenopause""".split()

# Medication (generic and common brand names).
MEDICATION = """metformin insulin ozempic semaglutide wegovy mounjaro tirzepatide jardiance glipizide lisinopril amlodipine
losartan atenolol metoprolol bisoprolol ramipril hydrochlorothiazide furosemide warfarin apixaban eliquis xarelto
rivaroxaban clopidogrel statin statins atorvastatin simvastatin rosuvastatin lipitor crestor levothyroxine
synthroid sertraline zoloft fluoxetine prozac citalopram escitalopram lexapro paroxetine paxil venlafaxine
effexor duloxetine cymbalta bupropion wellbutrin mirtazapine trazodone amitriptyline lithium lamotrigine
lamictal valproate depakote quetiapine seroquel olanzapine risperidone aripiprazole abilify clozapine
haloperidol diazepam valium lorazepam ativan alprazolam xanax clonazepam klonopin zolpidem ambien melatonin
methylphenidate ritalin concerta adderall vyvanse lisdexamfetamine atomoxetine strattera gabapentin pregabalin
lyrica tramadol oxycodone hydrocodone morphine codeine fentanyl methadone suboxone buprenorphine naloxone
prednisone prednisolone hydrocortisone methotrexate humira adalimumab enbrel infliximab hydroxychloroquine
truvada  descovy biktarvy antiretroviral antiretrovirals tamoxifen letrozole herceptin keytruda
visanne dienogest clomid letrozole progesterone estradiol hrt testosterone finasteride spironolactone
isotretinoin accutane omeprazole pantoprazole ranitidine albuterol salbutamol ventolin symbicort inhaler
epipen antidepressant antidepressants antipsychotic antipsychotics benzodiazepine benzodiazepines
birth_control_pill contraceptive_pill  morning-after_pill viagra sildenafil cialis""".split()

HEALTH_MODIFIERS = ("type 1 ", "type 2 ", "type i ", "type ii ", "early onset ", "early-onset ", "late onset ",
                    "chronic ", "severe ", "acute ", "mild ", "stage 1 ", "stage 2 ", "stage 3 ", "stage 4 ",
                    "terminal ", "gestational ", "juvenile ", "postnatal ", "postpartum ", "clinical ", "major ")

ZH_HEALTH = """糖尿病 高血压 低血压 哮喘 癌症 肺癌 胃癌 肝癌 乳腺癌 白血病 淋巴瘤 肿瘤 化疗 放疗 痴呆 阿尔茨海默 老年痴呆 帕金森
癫痫 中风 脑梗 心梗 心脏病 心衰 冠心病 抑郁症 抑郁 焦虑症 焦虑 惊恐障碍 双相情感障碍 双相 躁郁症 精神分裂 强迫症 多动症
自闭症 孤独症 厌食症 暴食症 失眠 偏头痛 子宫内膜异位 多囊卵巢 不孕 不育 流产 怀孕 孕期 早孕 试管婴儿 艾滋病 艾滋 HIV阳性
乙肝 丙肝 肝炎 结核 梅毒 肾病 尿毒症 透析 肝硬化 甲亢 甲减 痛风 银屑病 湿疹 红斑狼疮 类风湿 关节炎 骨质疏松 流感 新冠
肺炎 阑尾炎 胆结石 肾结石 贫血 更年期 阳痿 勃起功能障碍 二甲双胍 胰岛素 氨氯地平 硝苯地平 缬沙坦 阿司匹林 他汀
阿托伐他汀 舍曲林 氟西汀 帕罗西汀 艾司西酞普兰 文拉法辛 度洛西汀 米氮平 奥氮平 喹硫平 利培酮 阿立哌唑 碳酸锂
丙戊酸 拉莫三嗪 地西泮 阿普唑仑 劳拉西泮 氯硝西泮 唑吡坦 哌甲酯 专注达 择思达 左甲状腺素 优甲乐 华法林 氯吡格雷
泼尼松 甲氨蝶呤 布洛芬缓释 抗抑郁药 安眠药""".split()

RELIGION = """muslim muslims islam islamic christian christians christianity catholic catholics catholicism protestant
protestants evangelical evangelicals baptist methodist lutheran anglican presbyterian pentecostal mormon mormons
jehovah's_witness jehovah's_witnesses jewish jew jews judaism orthodox_jew hindu hindus hinduism buddhist buddhists
buddhism sikh sikhs sikhism jain jains taoist atheist atheists agnostic shia shiite sunni sufi ahmadi bahai
baha'i zoroastrian quaker quakers amish rastafarian wiccan pagan scientologist born-again_christian
coptic""".split()
ZH_RELIGION = "穆斯林 伊斯兰教 基督徒 基督教 天主教 天主教徒 新教 佛教徒 佛教 信佛 道教 犹太教 犹太人 印度教 锡克教 无神论者 信教 受洗".split()

# Political opinion: parties and the words that name a person's side (capitalised where lower case means more).
POLITICAL = """labour_party labour_member labour_voter tory tories conservative_party conservative_voter liberal_democrats
 lib_dem lib_dems green_party  snp plaid_cymru reform_uk ukip democrat democrats democratic_party
republican republicans republican_party gop maga libertarian_party communist_party communist communists socialist
socialists social_democrat social_democrats afd cdu csu spd fdp die_linke die_grünen rassemblement_national
front_national la_france_insoumise  platforma_obywatelska fidesz likud bjp congress_party  pti pml-n
  ndp liberal_party_of_canada conservative_party_of_canada bloc_québécois sinn_féin fianna_fáil fine_gael
     psoe m5s  fratelli_d'italia pvv vvd trade_unionist anarchist marxist leninist
far-right far-left antifa""".split()
ZH_POLITICAL = "共产党员 中共党员 党员 入党 民进党 国民党 民主党 共和党 法轮功 预备党员 共青团员".split()

ORIENTATION = """gay lesbian bisexual bi-sexual homosexual queer pansexual asexual demisexual lgbt lgbtq lgbtq+ lgbtqia
transgender trans_woman trans_man non-binary nonbinary genderqueer coming_out came_out""".split()
ZH_ORIENTATION = "同性恋 双性恋 男同 女同 拉拉 出柜 跨性别 酷儿".split()

# Nationalities, ethnicities and peoples (adjective and plural demonyms).
NRP = """afghan afghans albanian albanians algerian algerians american americans angolan argentine argentinian
armenian armenians australian australians austrian austrians azerbaijani bangladeshi bangladeshis belarusian
belgian belgians bolivian bosnian bosniak brazilian brazilians british bulgarian bulgarians burmese cambodian
cameroonian canadian canadians chilean chileans chinese colombian colombians congolese croat croats croatian
croatians cuban cubans cypriot czech czechs danish dane danes dominican dutch ecuadorian egyptian egyptians
emirati english eritrean estonian ethiopian ethiopians filipino filipina filipinos finnish  finns french
georgian german germans ghanaian ghanaians greek greeks guatemalan haitian honduran hungarian hungarians
icelandic indian indians indonesian indonesians iranian iranians iraqi iraqis irish israeli israelis italian
italians ivorian jamaican jamaicans japanese jordanian kazakh kenyan kenyans korean koreans kosovar kurd
kurds kurdish kuwaiti kyrgyz lao latvian lebanese liberian libyan lithuanian luxembourgish macedonian malagasy
malawian malaysian malaysians malian maltese mexican mexicans moldovan mongolian montenegrin moroccan moroccans
mozambican namibian nepalese nepali new_zealander nicaraguan nigerian nigerians norwegian norwegians omani
pakistani pakistanis palestinian palestinians panamanian paraguayan persian peruvian polish   portuguese
puerto_rican qatari romanian romanians russian russians rwandan salvadoran saudi saudis scottish scot scots
senegalese serb serbs serbian singaporean slovak slovene slovenian somali somalis south_african spanish
spaniard spaniards sri_lankan sudanese swede swedes swedish swiss syrian syrians taiwanese tajik tanzanian
thai tibetan tunisian turkish turk turks turkmen ugandan ukrainian ukrainians emirati uruguayan uzbek
venezuelan venezuelans vietnamese welsh yemeni zambian zimbabwean
arab arabs berber hispanic latino latina latinx asian asians african african_american  caucasian
white_british  romani gypsy sinti uyghur uighur hmong maori māori aboriginal indigenous first_nations
inuit sámi sami pashtun punjabi tamil sinhalese gujarati bengali hausa yoruba igbo zulu xhosa amhara
oromo tigrayan han_chinese""".split()
ZH_NRP = """维吾尔族 藏族 回族 蒙古族 壮族 满族 苗族 彝族 土家族 朝鲜族 哈萨克族 傣族 瑶族 侗族 白族 少数民族 汉族 维族
日本人 韩国人 朝鲜人 美国人 英国人 法国人 德国人 俄罗斯人 印度人 越南人 泰国人 菲律宾人 马来西亚人 新加坡人 印尼人
巴基斯坦人 阿拉伯人 犹太人 黑人 白人 台湾人 香港人 澳门人 外国人""".split()

# Only in capitals (``AIDS``, not ``hearing aids``; ``GOP``) or capitalised (``Democrat``, not ``democratic``).
UPPER_ONLY = frozenset("aids sti ibs snp gop afd cdu csu spd fdp pti ndp pvv vvd psoe bjp ukip m5s".split())
CAPITALISED_ONLY = frozenset({"democrat", "democrats", "republican", "republicans", "tory", "tories", "reform uk",
                              "green party", "congress party", "liberal democrats", "labour member", "labour voter"})

# Demonyms that are also a language's name: after these words they name the language, not a group.
LANGUAGE_CUES = frozenset("in into to from speak speaks spoke speaking fluent basic native learn learning study "
                          "studying translate translated write written read teach".split())
