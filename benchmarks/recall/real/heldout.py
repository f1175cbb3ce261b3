"""Held-out prompts: written before any detector change of issue 38 and never read per item while tuning (only
their totals are printed). ``[[value|family]]`` marks a private unit; see ``prompts.py`` for the families."""

PROMPTS: tuple[tuple[str, str], ...] = (
    ("resume", """can u fix the grammar in my resume summary pls

[[Marek Dvořák|pe]]
[[Brno|op]], Czech Republic | [[marek.dvorak88@seznam.cz|co]] | [[+420 603 118 442|co]]
linkedin: [[linkedin.com/in/marekdvorak88|on]]

Experienced warehouse supervisor with 6 years at [[Rohlik Group|op]], managing team of 14 pickers. I studied logistics at [[VSB Technical University of Ostrava|op]] (2014-2017). fluent czech, good english, basic german"""),
    ("resume", """rewrite this for a data analyst job, make it sound more profesional:

i worked at [[Tesco Bank|op]] in [[Edinburgh|op]] from 2019, doing excel reports for the collections team. my manager [[Fiona|pe]] said i was the fastest at vlookups lol. before that i was a barista at [[Brew Lab|op]]. employee no was [[TB449201|id]] if they ask for reference"""),
    ("cover_letter", """Dear Hiring Manager,

My name is [[Aisha Bello|pe]] and I am applying for the Junior Nurse position at [[St Thomas' Hospital|op]]. I completed my nursing degree at [[University of Lagos|op]] and have been working in [[Ikeja|op]] for two years. As a [[Nigerian|sp]] nurse I understand ...

can you finish this letter, keep it under 300 words"""),
    ("cover_letter", """help me write cover letter for internship at [[Shopify|op]]. about me: 3rd year cs student at [[uni of waterloo|op]], student number [[20817345|id]], did a project with my friend [[kenji|pe]] building a discord bot ([[github.com/kenjiyamada-dev|on]]/modbot). I want to sound confident not arrogant"""),
    ("visa", """I am applying for a Schengen visa at the German consulate in [[Mumbai|op]]. my passport no is [[Z4418203|id]], appointment ref [[MUM-SCH-2291834|id]]. I will stay with my sister [[Ritu|pe]] in [[Frankfurt|op]] at [[Kaiserstraße 48|co]]. Please draft the cover letter explaining purpose of visit (her wedding)"""),
    ("visa", """帮我写一封签证解释信。我叫[[李晓梅|pe]]，在[[杭州|op]][[阿里巴巴|op]]工作，护照号[[E71820394|id]]。去年因为[[怀孕|sp]]取消了去日本的行程，所以有一次拒签记录。请用英文写"""),
    ("visa", """uk visitor visa question - my GWF number is [[GWF071829934|id]] and they asked for bank statements. I bank with [[Meezan Bank|op]] in [[Lahore|op]], account ending [[4417|id]]. I'm [[Pakistani|sp]], does it matter that I visited [[Iran|op]] for ziyarat last year? I am [[Shia|sp]]"""),
    ("corporate", """summarise this email thread for me:

From: [[Daniel Okafor|pe]] <[[d.okafor@halvorsen-logistics.com|co]]>
Subject: Q3 numbers

Hi [[Tomas|pe]],
the [[Rotterdam|op]] depot came in at 4.2M revenue, we lost the [[Vandermeer|op]] contract. [[Ingrid|pe]] wants the board deck by friday. PO [[4500188213|id]] still unpaid.
cheers
Dan"""),
    ("corporate", """Write a polite reminder to our client. invoice [[INV-2024-0831|id]] for 12,400 EUR is 45 days overdue. contact person is [[mr. haugland|pe]] at [[Fjordline Shipping AS|op]]. our company is [[Brightwave Consulting|op]]. dont be rude they are a big customer"""),
    ("financial", """my accountant [[Sunita|pe]] says i owe tax on the ISA transfer, is that right? i moved 20k from [[Hargreaves Lansdown|op]] to [[Vanguard|op]] in march, client ref [[HL8823917|id]]. I live in [[Leeds|op]] and earn about 52k"""),
    ("financial", """请帮我分析一下这个月的开支，我在[[招商银行|op]]的信用卡尾号[[6621|id]]，房租5200，给我妈[[王秀兰|pe]]转了3000，还有[[瑞幸|op]]咖啡大概400"""),
    ("health", """I was diagnosed with [[type 2 diabetes|sp]] last month and my doctor put me on [[metformin|sp]] 500mg twice a day. im also [[pregnant|sp]] (18 weeks). is it safe? my GP is [[dr. harrow|pe]] at [[Millbrook Surgery|op]]"""),
    ("health", """my son [[Leo|pe]] (7) has [[ADHD|sp]] and the school ([[St. Brigid's Primary|op]]) wants a meeting. can you help me prepare questions? he takes [[Ritalin|sp]] in the mornings"""),
    ("health", """医生说我有[[抑郁症|sp]]，开了[[舍曲林|sp]]，吃了两周还是睡不着。我在[[深圳|op]]，能不能推荐一些自我调节的方法"""),
    ("health", """been having panic attacks since my divorce. therapist ([[Joanne|pe]]) thinks its [[PTSD|sp]]. I'm a [[gay|sp]] man in a small town in [[Alabama|op]] and theres not much support here. what online communities are good"""),
    ("email", """can you translate this to english:

Hola [[Carmen|pe]],
te escribo porque el pedido [[#ES-558120|id]] no ha llegado a [[Calle Mayor 14, 3ºB|co]], [[Zaragoza|op]]. Mi teléfono es [[612 448 903|co]].
Un saludo,
[[Javier Ruiz|pe]]"""),
    ("email", """reply to this for me, say yes to tuesday:

> On Mon, [[Priya Raman|pe]] wrote:
> Hey! are you free tuesday to go over the [[Kestrel|op]] proposal? [[Ahmed|pe]] will join from the [[Dubai|op]] office. My cell is [[+971 50 338 2174|co]] if easier"""),
    ("code", """getting this error when i run my script, help

Traceback (most recent call last):
  File "C:\\Users\\[[snowak|on]]\\Documents\\thesis\\analysis.py", line 42, in <module>
    df = pd.read_csv("C:\\Users\\[[snowak|on]]\\Documents\\thesis\\data\\survey.csv")
FileNotFoundError: [Errno 2] No such file or directory"""),
    ("code", """why does my android build fail?

> Task :app:processDebugManifest FAILED
/home/[[ivan_petrov|on]]/AndroidStudioProjects/Lab07/app/src/main/AndroidManifest.xml Error:
	Attribute application@appComponentFactory value=(androidx.core.app.CoreComponentFactory)
package="[[ru.mirea.petrov|on]].lab07"
"""),
    ("code", """my git push keeps asking for password

$ git push origin main
remote: Permission to [[lucasferreira93|on]]/tcc-unicamp.git denied to [[lucasferreira93|on]].
fatal: unable to access 'https://github.com/[[lucasferreira93|on]]/tcc-unicamp.git/': The requested URL returned error: 403"""),
    ("code", """npm error, what does it mean

npm ERR! path /Users/[[hannah.schmidt|on]]/dev/portfolio/node_modules/sharp
npm ERR! command failed
npm ERR! A complete log of this run can be found in: /Users/[[hannah.schmidt|on]]/.npm/_logs/2024-03-02T10_11_22_018Z-debug-0.log

its for my site [[hannahschmidt.design|on]]"""),
    ("code", """Django settings problem, DB wont connect:

DATABASES = {'default': {'ENGINE': 'django.db.backends.postgresql', 'NAME': 'clinic_db', 'HOST': 'localhost'}}
log: connection refused for user "[[mkariuki|on]]"
project is at /home/[[mkariuki|on]]/projects/[[nairobi-dental|op]]-booking"""),
    ("chat", """what should i get my girlfriend [[Sofia|pe]] for our anniversary? she loves hiking and we met at [[Universidad de Chile|op]]. budget 100 usd"""),
    ("chat", """tell [[ashok|pe]] that the meeting moved to 3pm, write it as a whatsapp msg. also remind him to bring the [[Zenith|op]] files"""),
    ("chat", """我和[[小林|pe]]吵架了，因为她觉得我太忙。我在[[腾讯|op]]上班每天加班到十点。怎么跟她道歉比较好"""),
    ("chat", """is it weird that as a [[Catholic|sp]] I want to attend my friend's [[Hindu|sp]] wedding? [[Arjun|pe]] invited me to the ceremony in [[Chennai|op]]"""),
    ("chat", """I'm [[Turkish|sp]] living in [[Berlin|op]] and my landlord [[Herr Köhler|pe]] keeps entering my flat without notice. what are my rights? rental contract no [[MV-2021-33817|id]]"""),
    ("politics", """I'm a member of the [[Labour Party|sp]] and want to write to my MP about bus cuts in [[Stockport|op]]. can you draft a letter? my name is [[Gareth Lewis|pe]], [[14 Heaton Moor Rd|co]]"""),
    ("politics", """as a [[Republican|sp]] voter I disagree with my union ([[UAW Local 600|op]]) endorsing candidates. how do I opt out of political dues? my member id is [[600-48213|id]]"""),
    ("booking", """we stayed at [[Hotel Albergo Sole|op]] in [[Positano|op]] and they charged us twice. booking reference [[4821.553.901|id]], card ending [[0092|id]]. write a complaint in italian"""),
    ("booking", """flight got cancelled, PNR [[QX7R2M|id]], ryanair. me and my husband [[Piotr|pe]] were flying from [[Kraków|op]] to [[Dublin|op]]. what compensation can i claim under EU261"""),
    ("mixed", """老板让我写个 weekly report in english. 本周完成了 [[华为|op]] 项目的 API 对接，和 [[Jason|pe]] 一起 debug 了 payment 模块，工号 [[HW00571283|id]]. 下周去 [[成都|op]] 出差"""),
    ("mixed", """帮我看下这个报错
  File "/home/[[zhangwei|on]]/work/crawler/main.py", line 17
    resp = requests.get("https://[[zhangwei-blog.cn|on]]/api/posts")
requests.exceptions.SSLError"""),
    ("school", """my teacher [[mrs okonkwo|pe]] gave me a C on my essay about being [[muslim|sp]] in [[Manchester|op]]. student id [[S2219034|id]]. can you help me appeal"""),
    ("school", """pls check my uni application essay. I grew up in [[Tromsø|op]], my dad is [[Sámi|sp]] and my mum is from [[Vietnam|op]]. I want to study marine biology at [[NTNU|op]]"""),
    ("legal", """my employer [[Kaufland|op]] fired me after I told them I'm [[HIV positive|sp]]. is this legal in germany? my personnel number is [[0048812|id]] and my boss is [[Sabine|pe]]"""),
    ("app", """publish fails on play console: package name [[com.danielakim|on]].budgettracker already used?? I changed it in build.gradle applicationId "[[com.danielakim|on]].budgettracker2" still fails"""),
    ("app", """youtube channel growth tips? my channel is [[youtube.com/@cookingwithnonna_rosa|on]], 2k subs. I post [[Sicilian|sp]] recipes my grandmother [[Rosa|pe]] taught me"""),
    ("support", """customer wrote this, draft a reply:
"hi my order [[112-4471902-8830215|id]] never arrived, I live at [[9 Rue des Lilas|co]], [[Lyon|op]]. please refund to my account. [[Élodie M.|pe]]" """),
    ("support", """log from our server, is this an attack?
[[83.144.20.17|on]] - - [12/Mar/2024:10:01:22] "GET /account/[[jsmith42|on]]/settings HTTP/1.1" 200
[[83.144.20.17|on]] - - [12/Mar/2024:10:01:23] "POST /login?user=[[anna.kowalczyk|on]] HTTP/1.1" 401"""),
)
