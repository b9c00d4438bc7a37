"""Secrets in the phrasings people paste into chats (issue 38), in nine languages: each value is
replaced whole (quotes kept), with the same length, the same way under one key; sentences about
passwords that hold none stay as they are."""

from __future__ import annotations

import pytest

from shadowreplay.anonymize import Scrubber

# (family, language, text, the secret values in it)
CASES = [
    # quoted or backticked after a secret word
    ("quoted", "en", "The box can be accessed with password 'Xk9#mQ2v' from the VPN.", ["Xk9#mQ2v"]),
    ("quoted", "en", 'I reset his password "bluefish77" this morning.', ["bluefish77"]),
    ("quoted", "en", "my password was 'correct horse' yesterday", ["correct horse"]),
    ("quoted", "en", "use the shared password `Stag1ng!Box` for staging", ["Stag1ng!Box"]),
    ("quoted", "zh", "我的密码是“Wq8#kLm2”，别告诉别人", ["Wq8#kLm2"]),
    ("quoted", "zh", "密码“hunter22”已经过期了", ["hunter22"]),
    ("quoted", "es", 'mi contraseña es "Perro#2024" pero la cambiaré', ["Perro#2024"]),
    ("quoted", "de", "Das Kennwort „Sonne!77“ gilt bis Freitag.", ["Sonne!77"]),
    ("quoted", "fr", "mon mot de passe est « Chat#Noir9 » depuis hier", ["Chat#Noir9"]),
    ("quoted", "pt", "minha senha é 'Gato@123' no servidor", ["Gato@123"]),
    ("quoted", "ja", "パスワードは「Sakura#88」です", ["Sakura#88"]),
    ("quoted", "ko", "비밀번호는 'Hangang!7'입니다", ["Hangang!7"]),
    ("quoted", "ru", "мой пароль «Moskva#1147», не говори никому", ["Moskva#1147"]),
    # a login and a password slashed, labelled or beside a word of logging in
    ("pair", "en", "u: ops-bot9 / p: Candle4547%", ["ops-bot9", "Candle4547%"]),
    ("pair", "ja", "wang_li73 / mWEJ2Do9fZ4 でログインしてください", ["wang_li73", "mWEJ2Do9fZ4"]),
    ("pair", "en", "sign in with deploy_7 / Gr33n!Tea", ["deploy_7", "Gr33n!Tea"]),
    # Samba's user%password, a `secret` or token key unquoted or typed like a password
    ("command", "en", "smbclient //nas/share -U admin%Lantern7025&", ["Lantern7025&"]),
    ("config", "en", "SECRET=Maple966!", ["Maple966!"]),
    ("config", "pt", 'auth_token: "a%aDB2Z6d"', ["a%aDB2Z6d"]),
    # a typed value glued to the CJK text after it; Latin words after a CJK password word
    ("copula", "ja", "新しいパスワードはS3cr3t24$になります", ["S3cr3t24$"]),
    ("copula", "zh", "新密码将是tigermaple770", ["tigermaple770"]),
    ("passphrase", "zh", "口令是 marble garden river lantern", ["marble garden river lantern"]),
    ("passphrase", "ko", "암호: window candle violet stone", ["window candle violet stone"]),
    ("passphrase", "en", "mnemonic: window maple copper river", ["window maple copper river"]),
    # modal copulas and verbs of staying; a German compound with a lower-case first part
    ("copula", "en", "the sudo password should be Garden2255_", ["Garden2255_"]),
    ("copula", "es", "la contraseña de sudo debería ser quietgarden222", ["quietgarden222"]),
    ("copula", "de", "das sudo-Passwort sollte Tr0ub4dor23$ sein", ["Tr0ub4dor23$"]),
    ("copula", "zh", "登录密码一直是Paper1584?", ["Paper1584"]),
    ("copula", "pt", "a senha continua Fw?.U@7.6", ["Fw?.U@7.6"]),
    ("copula", "fr", "le code d'accès est papermaple640", ["papermaple640"]),
    ("pin", "es", "código 2FA: 376767", ["376767"]),
    ("pin", "ko", "일회용 코드: 337631", ["337631"]),
    ("quoted", "en", "for the router I used `lanterntiger980`, password-wise", ["lanterntiger980"]),
    # a word before the preposition, a Russian compound, labels with `=`, words between a PIN and its digits
    ("copula", "es", "la contraseña root del NAS es Tiger7100%", ["Tiger7100%"]),
    ("copula", "ru", "root-пароль от NAS Stone1526+", ["Stone1526+"]),
    ("pair", "zh", "用户=jdoe9 密码=P@ssw0rd27!", ["jdoe9", "P@ssw0rd27"]),
    ("pin", "ru", "PIN-код SIM-карты 353182", ["353182"]),
    ("quoted", "de", 'er hat "Paper5344?" ins Passwortfeld getippt', ["Paper5344?"]),
    ("copula", "ja", "パスワード変更しました→Garden22x", ["Garden22x"]),
    ("passphrase", "de", "Die Wiederherstellungsphrase lautet maple violet paper candle", ["maple violet paper candle"]),
    # a door code, a value after three words and a colon, a password whose first letter stands alone
    ("pin", "de", "der Türcode ist 940424", ["940424"]),
    ("pin", "ru", "код от двери 471179", ["471179"]),
    ("pin", "zh", "门禁密码204255", ["204255"]),
    ("copula", "en", "Password for the guest network: vPy?ZAPFkfr", ["vPy?ZAPFkfr"]),
    ("copula", "fr", "le mot de passe admin est F!NmHqJjec", ["F!NmHqJjec"]),
    # a wallet's seed words after what they restore and that they are words; a password piped to sudo
    ("passphrase", "es", "mi frase semilla: paper window river quiet", ["paper window river quiet"]),
    ("passphrase", "ru", "моя сид-фраза: copper tiger marble garden", ["copper tiger marble garden"]),
    ("passphrase", "ko", "시드 문구는 window cloud marble north", ["window cloud marble north"]),
    ("passphrase", "en", "recovery words: candle maple garden stone", ["candle maple garden stone"]),
    ("command", "en", "echo 'violetorbit560' | sudo -S apt update", ["violetorbit560"]),
    # a password as the object of a change (`を…に変更`, `를 …로 바꿨어요`, `改成…了`), after `c'est`
    ("copula", "ja", "パスワードをCandle6501*に変更しました", ["Candle6501*"]),
    ("copula", "ko", "비밀번호를 Srhb-z$Q9v로 바꿨어요", ["Srhb-z$Q9v"]),
    ("copula", "zh", "密码改成Violet3620!了", ["Violet3620!"]),
    ("copula", "fr", "le mot de passe wifi c'est mapleriver653", ["mapleriver653"]),
    # R7's phrasings: a count of seed words, a login then a password on the next line, user:pass
    # joined by a colon on a line that says so, `'s`, a mixed-case value after two words, an XML
    # element, Windows' `net use`
    ("passphrase", "en", "12 words: orbit marble garden north", ["orbit marble garden north"]),
    ("passphrase", "fr", "mes 12 mots : river marble tiger window", ["river marble tiger window"]),
    ("pair", "en", "username: m.kowalski70\npassword: Qw3rty51$", ["m.kowalski70", "Qw3rty51$"]),
    ("pair", "en", "jdoe51:P@ssw0rd56! (user:pass)", ["jdoe51", "P@ssw0rd56!"]),
    ("copula", "en", "the password's Marble1236$", ["Marble1236$"]),
    ("copula", "fr", "le mot de passe temporaire est pKwcjTSeNAB", ["pKwcjTSeNAB"]),
    ("config", "en", "<password>Violet1581#</password>", ["Violet1581#"]),
    ("command", "en", "net use Z: \\\\srv\\share /user:admin Qw3rty61$", ["Qw3rty61$"]),
    # after a copula, unquoted
    ("copula", "en", "my password is hunter2 for now", ["hunter2"]),
    ("copula", "zh", "我的密码是abc123x", ["abc123x"]),
    ("copula", "zh", "密码：芝麻开门吧，快", ["芝麻开门吧"]),
    ("copula", "es", "mi contraseña es perro123", ["perro123"]),
    ("copula", "de", "Mein Passwort lautet Sommer2024!", ["Sommer2024"]),
    ("copula", "fr", "mon mot de passe est soleil42", ["soleil42"]),
    ("copula", "pt", "a senha do wifi é casa2024", ["casa2024"]),
    ("copula", "ja", "パスワードはhunter22です", ["hunter22"]),
    ("copula", "ko", "비밀번호는 seoul1234입니다", ["seoul1234"]),
    ("copula", "ru", "мой пароль qwerty987", ["qwerty987"]),
    # credential pairs
    ("pair", "en", "login with anna.k@mail.example.com / Tr0ub4dor&3", ["Tr0ub4dor&3"]),
    ("pair", "en", "creds: jdoe@mail.example.com:P@ssw0rd40$", ["P@ssw0rd40$"]),
    ("pair", "en", "username jdoe42, password Qw3rty!9", ["jdoe42", "Qw3rty!9"]),
    ("pair", "de", "Benutzername ops-bot62, Passwort fzMW.q4Td", ["ops-bot62", "fzMW.q4Td"]),
    ("pair", "zh", "用户名 wang_li7，密码 Lw7#pq2z", ["wang_li7", "Lw7#pq2z"]),
    ("pair", "ru", "логин m.kowalski14, пароль Qw3rty63#", ["m.kowalski14", "Qw3rty63#"]),
    # config and command lines, connection URIs
    ("config", "en", "DB_PASSWORD=s3cr3tValue", ["s3cr3tValue"]),
    ("config", "en", "export PGPASSWORD='pg!Pass99'", ["pg!Pass99"]),
    ("config", "en", 'SECRET_KEY = "django-insecure-8f#k2l!x0q"', ["django-insecure-8f#k2l!x0q"]),
    ("config", "en", "database:\n  password: yamlPass77\n", ["yamlPass77"]),
    ("config", "en", '{"user": "admin", "password": "json pass 42"}', ["json pass 42"]),
    ("config", "en", '[db]\npassword = "toml!Pw1"', ["toml!Pw1"]),
    ("command", "en", "mysql -u root -pMyS3cret mydb", ["MyS3cret"]),
    ("command", "en", "sshpass -p Ss4pass ssh admin@10.0.0.5", ["Ss4pass"]),
    ("command", "en", "curl -u admin:Cu7lPass https://api.internal/v1", ["Cu7lPass"]),
    ("uri", "en", "DATABASE_URL=postgres://admin:plainpassword@db.internal:5432/app", ["plainpassword"]),
    # passphrases, PINs and one-time codes
    ("passphrase", "en", "my passphrase is maple orbit candle river", ["maple orbit candle river"]),
    ("passphrase", "de", "meine Passphrase lautet Tiger Wolke Kupfer Garten", ["Tiger Wolke Kupfer Garten"]),
    ("pin", "en", "my PIN is 4821", ["4821"]),
    ("pin", "en", "your one-time code is 902114", ["902114"]),
    ("pin", "zh", "验证码：583920，五分钟内有效", ["583920"]),
    ("pin", "es", "código de verificación: 774201", ["774201"]),
    ("pin", "fr", "code de vérification : 118832", ["118832"]),
    ("pin", "pt", "meu PIN é 9921", ["9921"]),
    ("pin", "ja", "暗証番号は4417です", ["4417"]),
    ("pin", "ko", "인증번호는 662910입니다", ["662910"]),
    ("pin", "ru", "код подтверждения: 551903", ["551903"]),
    # a quoted value elsewhere in the secret word's sentence
    ("quoted", "en", "reset it to 'tZdm+9CB8Yz' and send me the new password", ["tZdm+9CB8Yz"]),
    ("quoted", "en", "The VPN password (`S3cr3t95#`) is in the vault too.", ["S3cr3t95#"]),
    ("quoted", "es", "La contraseña de la base de datos es «P@ssw0rd63!».", ["P@ssw0rd63!"]),
    ("quoted", "de", "Kennwort für den Router: 'L3tm3in59!'", ["L3tm3in59!"]),
    ("quoted", "fr", 'Le mot de passe de la box, c\'est "marbleviolet81".', ["marbleviolet81"]),
    # words between the secret word and a value of a password's shape; compounds
    ("copula", "es", "contraseña nueva: P@ssw0rd29$", ["P@ssw0rd29$"]),
    ("copula", "ru", "Пароль от wifi quietmaple640", ["quietmaple640"]),
    ("copula", "de", "Das WLAN-Passwort ist windowstone988", ["windowstone988"]),
    ("copula", "de", "neues Passwort: rR.xg29jt", ["rR.xg29jt"]),
    ("pair", "fr", "utilisateur ops-bot29 et mot de passe cloudpaper29", ["ops-bot29", "cloudpaper29"]),
    ("config", "es", "mi .env tiene MYSQL_ROOT_PASSWORD=D3&N#rQpLdC@Da", ["D3&N#rQpLdC@Da"]),
    ("config", "en", 'SECRET_KEY = "S3cr3t87!"', ["S3cr3t87!"]),
    ("uri", "en", "connect to redis://admin:$uY55Z_UY9bw@10.1.2.3:6379", ["$uY55Z_UY9bw"]),
    ("uri", "ko", "접속 URL은 redis://:Window7325%@cache:6379 입니다", ["Window7325%"]),
    ("passphrase", "fr", "la phrase de passe est cloud marble river paper", ["cloud marble river paper"]),
    ("passphrase", "ru", "парольная фраза: candle lantern copper north", ["candle lantern copper north"]),
    ("passphrase", "zh", "密码短语是 maple north quiet tiger", ["maple north quiet tiger"]),
    ("pin", "en", "Use code 675783 to sign in.", ["675783"]),
    ("pin", "es", "el PIN de la tarjeta es 589169", ["589169"]),
    ("pin", "de", "Der Code zur Anmeldung: 147504", ["147504"]),
    ("pin", "ru", "ПИН-код карты 731964", ["731964"]),
    # the third held-out set's misses (R3, now dev), each at its mechanism
    ("pair", "en", "creds are m.kowalski10 / Lantern6207+", ["m.kowalski10", "Lantern6207+"]),
    ("pair", "en", "login jdoe28 pass sV9!m@gFj697K", ["jdoe28", "sV9!m@gFj697K"]),
    ("pair", "ja", "IDはjdoe30でパスワードはWindow8631.です", ["jdoe30", "Window8631"]),
    ("pair", "ko", "아이디 admin25 비번 Maple5876+", ["admin25", "Maple5876+"]),
    ("copula", "en", "The root password on that box is coppercandle554", ["coppercandle554"]),
    ("copula", "zh", "密码就是mapleviolet36", ["mapleviolet36"]),
    ("quoted", "de", "Zugangspasswort: „gardenviolet506“", ["gardenviolet506"]),
    ("copula", "de", "Das Adminkennwort lautet Hunter22!x", ["Hunter22!x"]),
    # the fourth held-out set's misses (R4, now dev)
    ("pair", "en", "log in as jdoe81 with password Xu!8+EF?its88C", ["jdoe81", "Xu!8+EF?its88C"]),
    ("pair", "es", "entra como admin298 con la contraseña se$xy?_vT5", ["admin298", "se$xy?_vT5"]),
    ("pair", "fr", "connecte-toi en m.kowalski33 avec le mot de passe S3cr3t47$", ["m.kowalski33", "S3cr3t47$"]),
    ("pair", "ko", "wang_li72 계정 비밀번호는 Paper9614*", ["wang_li72", "Paper9614*"]),
    ("pair", "zh", "登录名 wang_li71 密码 Tr0ub4dor49$", ["wang_li71", "Tr0ub4dor49$"]),
    ("pair", "ja", "ユーザー: ops-bot83 パスワード: m?N@Ntok", ["ops-bot83", "m?N@Ntok"]),
    ("command", "en", "mongo -u admin -p SpXFQhy839Bk65Z --authenticationDatabase admin", ["SpXFQhy839Bk65Z"]),
    ("command", "en", "htpasswd -b .htpasswd admin lanternquiet497", ["lanternquiet497"]),
    ("uri", "fr", "le FTP : ftp://upload:-?@9gHt+u@@files/", ["-?@9gHt+u@"]),
    ("copula", "es", "Contraseña del wifi: Qw3rty29#", ["Qw3rty29#"]),
    ("passphrase", "zh", "密语是 orbit stone marble river", ["orbit stone marble river"]),
    ("pin", "zh", "我的PIN码是338905", ["338905"]),
    ("pin", "ru", "мой ПИН 723071", ["723071"]),
    # R8's phrasings (benchmarks/secrets_corpus.py)
    ("quoted", "pt", "senha → 'unDTcexb'", ["unDTcexb"]),
    ("quoted", "ru", "пароль → «nPkjkoqaA»", ["nPkjkoqaA"]),
    ("copula", "ru", "пароль root — N3wrTu+?k$", ["N3wrTu+?k$"]),
    ("config", "en", "--db-password -T@W&z#wDhXM2W+", ["-T@W&z#wDhXM2W+"]),
    ("command", "en", "mysql -h db -u admin -p'PpL_dTnMj'", ["PpL_dTnMj"]),
    ("command", "pt", "comando: docker login --username ci --password maplegarden387", ["maplegarden387"]),
    ("passphrase", "en", "my wallet seed: marble north tiger orbit", ["marble north tiger orbit"]),
    ("passphrase", "zh", "助记词如下：cloud stone lantern copper", ["cloud stone lantern copper"]),
    ("pin", "ja", "PINコードは808995です", ["808995"]),
    # R9's phrasings
    ("copula", "en", "password for the router is now coppernorth544", ["coppernorth544"]),
    ("copula", "es", "contraseña temporal fCjQ_NRGTF (cámbiala al entrar)", ["fCjQ_NRGTF"]),
    ("copula", "fr", "le code wifi c'est Tiger3908@", ["Tiger3908@"]),
    ("pair", "en", "creds: jdoe87/snuSBWQgMS", ["jdoe87", "snuSBWQgMS"]),
    ("config", "fr", "dans wp-config.php : define('DB_PASSWORD', 'Tr0ub4dor48#');", ["Tr0ub4dor48#"]),
    ("command", "en", "echo 'e_9cMMK!g' | docker login -u ci --password-stdin", ["e_9cMMK!g"]),
    ("command", "ko", "실행: net user admin ohc5WNZxaTTk /add", ["ohc5WNZxaTTk"]),
    ("passphrase", "en", "the passphrase we agreed on: quiet maple marble paper", ["quiet maple marble paper"]),
    ("pin", "en", "Use 469070 to verify your account", ["469070"]),
    ("pin", "en", "469070 is your Acme login code", ["469070"]),
    ("pin", "ko", "인증번호 [420096]", ["420096"]),
    # R10's phrasings
    ("command", "ja", "実行: sqlcmd -S db -U sa -P 'Cv4fFQo.u'", ["Cv4fFQo.u"]),
    ("command", "de", "Befehl: ldapsearch -x -D cn=admin -w cloudquiet697", ["cloudquiet697"]),
    ("command", "ru", "выполни: ssh-keygen -p -N 'Marble7486!' -f ~/.ssh/id_rsa", ["Marble7486!"]),
    ("command", "zh", "执行 echo 'root:mapleriver839' | chpasswd", ["mapleriver839"]),
    ("config", "de", "Eintrag in ~/.pgpass: db:5432:app:app:Copper1275", ["Copper1275"]),
    ("pair", "de", "Zugang: admin285 / cn5UEh$6L", ["admin285", "cn5UEh$6L"]),
    ("pair", "ru", "учётка wang_li45 / Quiet530!", ["wang_li45", "Quiet530!"]),
    ("pair", "en", "login ops-bot25 / pass Candle4309$ (staging)", ["ops-bot25", "Candle4309$"]),
    ("pair", "zh", "帐号ops-bot27 密码lanternmaple958", ["ops-bot27", "lanternmaple958"]),
    ("passphrase", "es", "la semilla es: candle quiet cloud river", ["candle quiet cloud river"]),
    ("passphrase", "en", "seed phrase (keep offline): cloud marble garden stone", ["cloud marble garden stone"]),
    ("passphrase", "ru", "мнемоника: cloud north window stone", ["cloud north window stone"]),
    ("passphrase", "ja", "シードは garden maple quiet stone", ["garden maple quiet stone"]),
    ("passphrase", "zh", "钱包种子：candle quiet tiger north", ["candle quiet tiger north"]),
    ("copula", "ru", "пароль сменил на violetnorth658", ["violetnorth658"]),
    ("copula", "ja", "パスワード変更後：Qw3rty81!", ["Qw3rty81!"]),
    ("copula", "ko", "비밀번호 변경됨: P@ssw0rd33#", ["P@ssw0rd33#"]),
    # R11's phrasings
    ("copula", "en", "Admin password -> gardencopper607", ["gardencopper607"]),
    ("copula", "fr", "mdp admin -> pcfBjmYFwh", ["pcfBjmYFwh"]),
    ("copula", "pt", "senha do admin -> q7uch#WJ%", ["q7uch#WJ%"]),
    ("copula", "ru", "пароль админа -> Maple7895#", ["Maple7895#"]),
    ("command", "en", "curl -H 'Authorization: Basic KGPfww5P5' https://api", ["KGPfww5P5"]),
    # R12's phrasings
    ("command", "en", "keytool -storepass L3tm3in68$ -list -keystore ks.jks", ["L3tm3in68$"]),
    ("command", "es", "corre: openssl rsa -in key.pem -passin pass:Qw3rty13#", ["Qw3rty13#"]),
    ("command", "de", "Befehl: 7z x backup.7z -pNorth2518&", ["North2518&"]),
    ("command", "fr", "commande : zip -P quietnorth395 secret.zip notes.txt", ["quietnorth395"]),
    ("passphrase", "pt", "frase de recuperação, em ordem: lantern marble stone cloud", ["lantern marble stone cloud"]),
    ("passphrase", "zh", "助记词（按顺序）：maple copper stone tiger", ["maple copper stone tiger"]),
    ("passphrase", "en", "wallet recovery: lantern north violet candle", ["lantern north violet candle"]),
    ("copula", "ja", "パスワードはまだCopper6560+のまま", ["Copper6560+"]),
    ("copula", "zh", "密码还是cloudcloud880", ["cloudcloud880"]),
    # R17's misses: verbs of becoming, adverbs of now, several words joined to the secret word,
    # an elided article after a preposition, a random part of a dotted value, a code of letters
    ("copula", "zh", "学校门户的密码改成了L3tm3in61!", ["L3tm3in61!"]),
    ("copula", "es", "para que sepas, la clave de staging quedó en teCUpbA.eiz", ["teCUpbA.eiz"]),
    ("copula", "de", "zur Info, das Staging-DB-Passwort ist jetzt Qw3rty30!", ["Qw3rty30!"]),
    ("copula", "fr", "le mot de passe du portail de l'école est maintenant 4Z2HPULMn*Lr?Eb", ["4Z2HPULMn*Lr?Eb"]),
    ("copula", "pt", "só pra avisar, a senha do banco de staging ficou S3cr3t19$", ["S3cr3t19$"]),
    ("copula", "ja", "学校ポータルのパスワードは今 !#va8JiaeW です", ["!#va8JiaeW"]),
    ("copula", "ko", "학교 포털 비밀번호는 이제 Cm3PV_Mr2GZy*예요", ["Cm3PV_Mr2GZy*"]),
    ("copula", "en", "school portal password = do.XT_5fyGzsnN", ["do.XT_5fyGzsnN"]),
    ("pin", "en", "the smart lock's master code became Garden9684! after the reset", ["Garden9684!"]),
    ("pair", "en", "creds for the console: admin231@mail.example.com and rivernorth198", ["rivernorth198"]),
    # R18's misses: a device's `pass`, the future as a copula, a labelled pair, a bare code after
    # a clause, a compound, a preposition; fish's `set -x`; `!` of a value in Chinese text
    ("quoted", "en", 'the camera\'s admin pass, "Window3928@", is printed on the box', ["Window3928@"]),
    ("copula", "pt", "a partir de segunda a senha do portal de RH vai ser S3cr3t19$", ["S3cr3t19$"]),
    ("pair", "en", "Steam: jdoe94 / %ywasg5NLy", ["jdoe94", "%ywasg5NLy"]),
    ("pair", "zh", "账户：jdoe9，口令：P@ssw0rd27!", ["jdoe9", "P@ssw0rd27!"]),
    ("config", "en", "set -x WIFI_PSK marblestone799", ["marblestone799"]),
    ("config", "en", 'set -gx API_TOKEN "tVq83Ls0aXh2"', ["tVq83Ls0aXh2"]),
    ("pin", "es", "el código que me mandaron por SMS es 163781", ["163781"]),
    ("pin", "de", "der Garagencode ist 068038", ["068038"]),
    ("pin", "ru", "код от гаража 353182", ["353182"]),
    # R19's misses: a clause or a name between the word and its copula, Russian `был`, `auth`
    # ending a key's name, a pair and what it is for, a lock's combination
    ("copula", "en", "okay so the password they gave us was North6973& but it expired", ["North6973&"]),
    ("copula", "de", "das Passwort, das wir bekommen haben, war Qw3rty30!", ["Qw3rty30!"]),
    ("copula", "ru", "пароль, который нам дали, был P@ssw0rd25$", ["P@ssw0rd25$"]),
    ("passphrase", "fr", "la phrase de passe GPG est violet lantern copper window", ["violet lantern copper window"]),
    ("config", "en", "REDIS_AUTH=5Rm--LJH", ["5Rm--LJH"]),
    ("pair", "en", "jdoe65 / North1895% for the staging box", ["jdoe65", "North1895%"]),
    ("pin", "es", "la combinación del candado es 046510", ["046510"]),
]

# talk about passwords, code that handles them: nothing here may change
UNCHANGED = [
    "Did you forget your password again?",
    "The password is incorrect.",
    "password is required",
    "if not password: raise ValueError('password is required')",
    "password = None",
    "password = getpass.getpass()",
    "password: str = field(default='')",
    "if password == confirm: save()",
    "self.password = password",
    "My password manager is 1Password.",
    "Keep the SECRET_KEY out of version control.",
    "token = request.headers.get('Authorization')",
    "postgres://user:password@localhost/db",
    "我忘记密码了，怎么重置？",
    "Passwort vergessen?",
    "Mot de passe oublié ?",
    "パスワードを忘れました",
    "Der Barcode ist 40063813.",
    "the Unicode is 000041",
    "the admin password is something you set at install",
    "set -x PATH /usr/local/bin $PATH",
    "Chart: 2020 / 2021",
    "the password you chose was too short",
    "auth_url=https://id.example.com/v3",
    "std::shared_ptr<Aws::Auth::AWSCredentialsProvider> provider;",
    "AUTH_TYPE=basic",
    "비밀번호를 잊어버렸어요",
    "Забыли пароль?",
    "Use a strong passphrase for your key.",
    "Passwords are hashed with bcrypt.",
    "credentials are stored in the vault",
    "I will pass the test tomorrow",
    "pass the user id to the login form",
    "def f():\n    pass\n",
    "Das Zugangspasswort ist abgelaufen.",
    "export PASSWORD_FILE=/run/secrets/db",
    "The passphrase is asked at boot.",
    "The admin password is in 1Password.",
    "Bitte ändern Sie Ihr Passwort regelmäßig.",
    "Run mongo -u admin -p to be asked for the password.",
    "see src/main.py / docs/index.md before you log in",
    "and/or sign in with TCP/IP",
    "SECRET_KEY must be set in production.",
    "token: str = field(default_factory=make_token)",
    "Die Wiederherstellungsphrase gehört nicht in die Cloud.",
    "mysql -u root -p prompts for the password.",
    "Password hashing uses Argon2.",
    "A seed phrase has 12 or 24 words.",
    "Translate these words: cat dog house tree",
    "<password>${DB_PASSWORD}</password>",
    "<tokenizer>BertTokenizer</tokenizer>",
    "the password for JavaScript apps is set in the console",
    "format user:pass, e.g. in http://host:8080/path",
    "パスワードを忘れました",
    "비밀번호를 잊어버렸어요",
    "Pass --password on the command line only in tests.",
    "run it with --password $DB_PASS", "--db-password -v", "the random seed: 42",
    "docker login --username ci",
    "The recovery phrase is 12 or 24 words.", 'x = os.environ.get("PASSWORD", "default")', "net user admin * /add",
    "net user guest /active:no", "The password hint is 'favourite pet'.", "密码错误：请重试", "backup: daily weekly monthly yearly",
    "The mnemonic must be written down.", "redis-cli -a shows a warning.", "sshpass -p is discouraged.",
    "mysql -p asks for the password", "zip -P is insecure.", "keytool asks for the store password.", "Basic auth sends the password base64-encoded.", "the password manager -> a vault", 'key = jwk.import_key("your-secret-key", "oct")', "echo $TOKEN | docker login -u x --password-stdin", "Use the app to verify it",
]


@pytest.fixture(scope="module")
def scrubber():
    return Scrubber(b"secrets-test-key")


@pytest.mark.parametrize("family,lang,text,values", CASES, ids=[f"{f}-{lang}-{i}" for i, (f, lang, _, _) in enumerate(CASES)])
def test_secret_replaced_whole_length_kept(scrubber, family, lang, text, values):
    r = scrubber.scrub_text(text)
    assert len(r.text) == len(text)
    for v in values:
        assert v not in r.text, r.text
        i = text.index(v)
        # replaced whole, in place: nothing of the value's characters that were letters or digits survives as a run
        new = r.text[i : i + len(v)]
        assert sum(a == b for a, b in zip(new, v) if a.isalnum()) < max(2, sum(c.isalnum() for c in v) // 2), (v, new)
    assert r.counts.get("secret", 0) >= 1, r.counts
    # what stands around a value (its quotes, the words) is kept
    first = min(text.index(v) for v in values)
    assert r.text[:first] == text[:first] or any(k != "secret" for k in r.counts)


@pytest.mark.parametrize("text", [c[2] for c in CASES if c[0] == "quoted"])
def test_quotes_kept(scrubber, text):
    out = scrubber.scrub_text(text).text
    assert [c for c in out if not c.isalnum()] == [c for c in text if not c.isalnum()]


def test_deterministic_under_the_key():
    text = "my password is hunter2 and the PIN is 4821"
    a, b = Scrubber(b"k1").scrub_text(text).text, Scrubber(b"k1").scrub_text(text).text
    c = Scrubber(b"k2").scrub_text(text).text
    assert a == b
    assert a != c and len(a) == len(c) == len(text)
    # the same value gets the same substitute in another phrasing
    s = Scrubber(b"k1")
    x = s.scrub_text("password: hunter2").text.split(": ")[1]
    y = s.scrub_text("mi contraseña es hunter2").text.split(" es ")[1]
    assert x == y != "hunter2"


@pytest.mark.parametrize("text", UNCHANGED)
def test_talk_about_passwords_unchanged(scrubber, text):
    assert scrubber.scrub_text(text).text == text


def test_a_port_after_an_address_is_no_password(scrubber):
    r = scrubber.scrub_text("connect to user@db.example.com:5432/app")
    assert r.text.endswith(":5432/app") and "secret" not in r.counts, r
