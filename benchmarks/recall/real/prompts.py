"""Development prompts: the ones read while writing rules (``heldout.py`` is not).

Written as users write them: typos, lower case, pasted logs and e-mails, mixed Chinese and English.
``[[value|family]]`` marks a private unit. Families: ``on`` links, paths and handles (the identifying segment
only: the user in a path or URL, the name in a package id); ``id`` identifiers and identifying numbers; ``pe``
people (full names, one name, lower case); ``op`` organisations and places (employer, school, town, hotel);
``sp`` special categories (health, nationality and ethnicity, religion, political opinion, sexual orientation);
``co`` contact (e-mail, phone, street address).
"""

PROMPTS: tuple[tuple[str, str], ...] = (
    ("resume", """pls improve my CV, here it is:

[[Julia Nowak|pe]] | [[Poznań|op]] | [[julia.nowak.pl@gmail.com|co]] | [[+48 512 330 781|co]]
portfolio: [[julianowak.design|on]]  github: [[github.com/jnowak-ux|on]]

EXPERIENCE
UX designer, [[Allegro|op]] (2020-now) - redesigned checkout, +8% conversion
Intern, [[Netguru|op]] (2019)
EDUCATION
BA design, [[University of Arts in Poznań|op]]"""),
    ("resume", """i need to translate my resume to english. i studied at [[Universidad Nacional Autónoma de México|op]] and worked at [[Bimbo|op]] in [[Monterrey|op]] as a quality engineer. my boss was [[ing. Ramírez|pe]]. i have my cedula profesional [[11284903|id]]"""),
    ("resume", """我的简历帮我润色一下：
姓名：[[陈思远|pe]]
毕业院校：[[浙江大学|op]] 计算机系
工作经历：2019-2023 [[字节跳动|op]] 后端开发，负责抖音推荐接口
现居：[[上海|op]]"""),
    ("cover_letter", """write a cover letter. job: sales associate at [[IKEA|op]] [[Wembley|op]]. I've worked at [[Primark|op]] for 2 years, my manager [[Deborah|pe]] can be a reference. im reliable and good with customers, english is my second language (im [[Romanian|sp]])"""),
    ("cover_letter", """I want to apply to a PhD at [[ETH Zurich|op]] with prof. [[Keller|pe]]. my masters thesis at [[TU Delft|op]] was on wind turbine fatigue, supervised by [[dr. van den Berg|pe]]. help me write motivation letter"""),
    ("visa", """I need help with my US student visa DS-160. my SEVIS id is [[N0028817263|id]] and I am going to [[Arizona State University|op]]. My father [[Mohammed|pe]] is sponsoring me, he works for [[Saudi Aramco|op]]. I am [[Saudi|sp]]."""),
    ("visa", """加拿大签证被拒了，申请号[[V318844920|id]]，理由是 ties to home country 不足。我在[[北京|op]]一家外企[[埃森哲|op]]上班，有房有车。怎么写 reapplication letter"""),
    ("visa", """my wife [[Nguyen Thi Lan|pe]] is [[Vietnamese|sp]] and we want to apply for spouse visa to australia. application id [[EGOFPXX8KD|id]]. we married in [[Da Nang|op]]. what documents we need"""),
    ("corporate", """Make this into bullet points for the exec summary:

Hi all, quick update from [[Marta|pe]]. The [[Kowloon|op]] warehouse lease renewal with [[Sino Land|op]] is stuck, legal ([[Raymond|pe]]) wants another review. cost centre [[CC-7712|id]] is over budget by 180k. [[Wei Jie|pe]] will present on thursday."""),
    ("corporate", """draft an announcement: [[Stefan Bauer|pe]] is leaving [[Müller Logistik GmbH|op]] after 12 years, his last day is the 28th, [[Katrin|pe]] takes over the [[Hamburg|op]] team"""),
    ("financial", """my bank [[Monzo|op]] froze my account, ref [[MZ-CASE-448192|id]]. I got a 3000 transfer from my brother [[Kwame|pe]] in [[Accra|op]] and they want proof. write a message to them"""),
    ("financial", """帮我算一下房贷。我在[[建设银行|op]]贷了120万，30年，利率3.85%。贷款合同号[[JH2023041987|id]]"""),
    ("health", """I have [[endometriosis|sp]] and my gynecologist [[dr. patel|pe]] suggested [[Visanne|sp]]. anyone know side effects? I'm 29 and we're trying to get [[pregnant|sp]]"""),
    ("health", """my mom ([[Margaret|pe]], 71) was just diagnosed with [[early onset dementia|sp]]. she lives alone in [[Duluth|op]]. what care options are there, we cant afford [[Sunrise Senior Living|op]]"""),
    ("health", """我爸爸有[[高血压|sp]]，一直在吃[[氨氯地平|sp]]，最近脚肿，是不是药的副作用？他住在[[成都|op]]"""),
    ("health", """im [[bipolar|sp]] and just started [[lithium|sp]], my psychiatrist at [[Kaiser|op]] said to get bloodwork. what should i watch out for"""),
    ("email", """fix the tone of this email, it sounds angry:

Hi [[Oliver|pe]],
I've asked 3 times for the [[Henderson|op]] files. [[Rachel|pe]] from finance is waiting. If I don't get them today I'll escalate to [[Mr. Whitaker|pe]].
[[Ben|pe]]"""),
    ("email", """translate to chinese:

Dear [[Ms. Zhou|pe]],
Thank you for your order [[SO-88213|id]]. It will ship from our [[Shenzhen|op]] factory on Monday. Please contact [[lily.chen@novacircuits.com|co]] for tracking.
Best, [[Mark Hughes|pe]], [[Nova Circuits|op]]"""),
    ("code", """help, python error:

Traceback (most recent call last):
  File "C:\\Users\\[[Kateryna Shevchenko|on]]\\Desktop\\my project\\bot.py", line 8, in <module>
    import telebot
ModuleNotFoundError: No module named 'telebot'"""),
    ("code", """why is my cron not running
*/5 * * * * /home/[[dmitri|on]]/scripts/backup.sh >> /home/[[dmitri|on]]/logs/backup.log 2>&1
(ubuntu 22.04)"""),
    ("code", """Gradle says duplicate class, config:
android {
    namespace 'com.[[anikasharma|on]].weatherapp'
    defaultConfig { applicationId "com.[[anikasharma|on]].weatherapp" }
}"""),
    ("code", """can you review my README?

# tcc-bot
made by [[Rafael Souza|pe]] for my final project at [[UFMG|op]].
clone: git clone https://github.com/[[rafasouza-dev|on]]/tcc-bot
contact me at [[rafael.souza@ufmg.br|co]]"""),
    ("code", """docker logs:
2024-05-02 11:02:13 ERROR auth failed for [[sarah.oconnor|on]]@[[10.2.14.77|on]]
2024-05-02 11:02:13 INFO mount /mnt/home/[[soconnor|on]]/data ok
why does auth fail"""),
    ("code", """jupyter cant find file: '/Users/[[tomaszwojcik|on]]/Downloads/sales_2023.xlsx'
i'm on mac, the file is definately there"""),
    ("chat", """my friend [[marcus|pe]] keeps borrowing money and not paying back. how do i say no without losing him as a friend"""),
    ("chat", """what gift for my boss [[Hiroshi|pe]]? he is [[Japanese|sp]] and very formal, we work at [[Rakuten|op]]"""),
    ("chat", """我室友[[阿杰|pe]]天天打游戏到凌晨，我们在[[华中科技大学|op]]，怎么跟他沟通"""),
    ("chat", """as a [[Jewish|sp]] woman dating a [[Muslim|sp]] guy ([[Yusuf|pe]]), how do we handle family holidays? my parents in [[Haifa|op]] dont know yet"""),
    ("chat", """I'm [[lesbian|sp]] and want to come out to my parents. they're very [[evangelical|sp]]. any advice?"""),
    ("politics", """im a [[Green Party|sp]] member in [[Bristol|op]], help me write a flyer about cycle lanes. sign it from [[Tom Ashworth|pe]], ward candidate"""),
    ("politics", """write a letter to the editor of the [[Des Moines Register|op]] from me, [[Linda Haas|pe]], a lifelong [[Democrat|sp]], about school funding"""),
    ("booking", """we stayed at [[Casa Lucia B&B|op]] in [[Sintra|op]], the host [[Lucia|pe]] was amazing. write a 5-star airbnb review. reservation code [[HMZ8Q4TK2P|id]]"""),
    ("booking", """train ticket refund - booking no [[TL-88412093|id]], trenitalia, [[Milano|op]] to [[Roma|op]], my name [[Giulia Ferri|pe]]"""),
    ("mixed", """帮我写 email 给 [[Kevin|pe]]，说明天的 standup 取消，因为 [[Lisa|pe]] 请病假了（[[流感|sp]]）。我们组在 [[蚂蚁集团|op]] 杭州总部"""),
    ("mixed", """这个 path 报错：/home/[[liuyang|on]]/miniconda3/envs/torch/lib/python3.10/site-packages/torch/__init__.py 怎么办"""),
    ("school", """my student number is [[ab123456|id]], i need to email [[professor Lindqvist|pe]] about missing the exam because of my [[migraine|sp]]. write the email"""),
    ("school", """我儿子[[乐乐|pe]]在[[海淀实验小学|op]]上二年级，老师说他有[[自闭症|sp]]倾向，我该怎么办"""),
    ("legal", """my landlord in [[Toronto|op]] wont return deposit. lease with [[Greenwin Property Management|op]], unit 1204, tenant id [[GW-TEN-20931|id]]. write a demand letter"""),
    ("app", """app store rejected my app [[com.lukasbrenner|on]].habits because of privacy policy. bundle id ok? my site is [[lukasbrenner.dev|on]]"""),
    ("support", """nginx access log, why so many 404s?
[[91.203.44.18|on]] - - "GET /u/[[kpetrova|on]]/avatar.png" 404
[[91.203.44.18|on]] - - "GET /u/[[kpetrova|on]]/banner.png" 404"""),
    ("support", """customer complaint from [[Mrs. Adeyemi|pe]], account [[ACC-3391827|id]]: her [[Peloton|op]] bike arrived damaged at [[22 Palmerston Road|co]], [[Southsea|op]]. she's [[diabetic|sp]] and needs the exercise per her doctor. draft apology"""),
)
