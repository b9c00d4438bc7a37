"""A generated corpus of secrets in the phrasings people paste into chats, and of sentences
that talk about passwords without holding one (benchmarks/overscrub_eval.py reads it).

Two splits, made from disjoint templates: `dev` (the rules may be tuned on it) and `test`
(held out: its templates were written apart and never looked at while tuning; its secrets are
drawn with another seed). Each earlier held-out set (`TEST_R1` to `TEST_R4` and their chatter)
was looked at after its round and is part of dev since; `TEST` is the fifth (R5), written
before R4's misses were looked at and never tuned on. Each item is (text, the planted values, family, language). Families:
quoted, copula, pair, config, command, uri, passphrase, pin. Languages: en, zh, es, de, fr,
pt, ja, ko, ru."""

from __future__ import annotations

import random

LANGS = ("en", "zh", "es", "de", "fr", "pt", "ja", "ko", "ru")
FAMILIES = ("quoted", "copula", "pair", "config", "command", "uri", "passphrase", "pin")

# {family: {lang: [template, ...]}}; {p} a password, {u} a login, {e} an e-mail address,
# {w} a passphrase (several words), {n} a PIN or code
DEV = {
    "quoted": {
        "en": ["The server can be accessed with password '{p}' from the VPN.", "I changed his password \"{p}\" this morning.",
               "my password was '{p}' yesterday", "use the shared password `{p}` for the staging box"],
        "zh": ["我的密码是“{p}”，别告诉别人", "密码“{p}”已经过期了", "请用密码「{p}」登录"],
        "es": ["mi contraseña es \"{p}\" pero la cambiaré", "usa la contraseña '{p}' para entrar"],
        "de": ["Mein Passwort lautet \"{p}\", bitte nicht weitergeben.", "Das Kennwort „{p}“ gilt bis Freitag."],
        "fr": ["mon mot de passe est « {p} » depuis hier", "le mot de passe '{p}' ne marche plus"],
        "pt": ["minha senha é \"{p}\" no servidor", "a senha '{p}' expirou"],
        "ja": ["パスワードは「{p}」です", "共有パスワード「{p}」を使ってください"],
        "ko": ["비밀번호는 '{p}'입니다", "공용 비밀번호 \"{p}\" 로 접속하세요"],
        "ru": ["мой пароль «{p}», не говори никому", "пароль \"{p}\" больше не работает"],
    },
    "copula": {
        "en": ["my password is {p} for now", "The wifi password is {p}.", "password: {p}"],
        "zh": ["我的密码是{p}", "wifi密码是 {p} 记一下", "密码：{p}"],
        "es": ["mi contraseña es {p}", "la clave es {p} para el wifi"],
        "de": ["Mein Passwort lautet {p}", "Das Passwort ist {p}."],
        "fr": ["mon mot de passe est {p}", "le mot de passe : {p}"],
        "pt": ["minha senha é {p}", "a senha do wifi é {p}"],
        "ja": ["パスワードは{p}です", "パスワード：{p}"],
        "ko": ["비밀번호는 {p}입니다", "비밀번호: {p}"],
        "ru": ["мой пароль {p}", "пароль: {p}"],
    },
    "pair": {
        "en": ["login with {e} / {p}", "creds: {e}:{p}", "username {u}, password {p}"],
        "zh": ["账号 {e} / {p}", "用户名 {u}，密码 {p}"],
        "es": ["usuario {u}, contraseña {p}", "entra con {e} / {p}"],
        "de": ["Benutzername {u}, Passwort {p}", "Zugang: {e} / {p}"],
        "fr": ["identifiant {u}, mot de passe {p}", "accès : {e} / {p}"],
        "pt": ["usuário {u}, senha {p}", "acesso: {e} / {p}"],
        "ja": ["ユーザー名 {u}、パスワード {p}", "{e} / {p} でログイン"],
        "ko": ["아이디 {u}, 비밀번호 {p}", "{e} / {p} 로 로그인"],
        "ru": ["логин {u}, пароль {p}", "вход: {e} / {p}"],
    },
    "config": {
        "en": ["DB_PASSWORD={p}", "export PGPASSWORD='{p}'", "password: {p}", "{{\"user\": \"admin\", \"password\": \"{p}\"}}"],
        "zh": ["配置里写的是 DB_PASSWORD={p}", "yaml 里 password: {p}"],
        "es": ["en el .env puse DB_PASSWORD={p}", "config: password = \"{p}\""],
        "de": ["in der .env steht DB_PASSWORD={p}", "password = \"{p}\" in der config.toml"],
        "fr": ["dans le .env : DB_PASSWORD={p}", "la ligne password={p} du fichier ini"],
        "pt": ["no .env: DB_PASSWORD={p}", "password: {p} no yaml"],
        "ja": ["設定は DB_PASSWORD={p} です", "yaml の password: {p}"],
        "ko": ["설정 파일에 DB_PASSWORD={p} 있어요", "password: {p} 로 설정"],
        "ru": ["в .env DB_PASSWORD={p}", "в конфиге password: {p}"],
    },
    "command": {
        "en": ["mysql -u root -p{p} mydb", "sshpass -p {p} ssh admin@10.0.0.5"],
        "zh": ["运行 mysql -u root -p{p} 就行"],
        "es": ["ejecuta mysql -u root -p{p}"],
        "de": ["führ mysql -u root -p{p} aus"],
        "fr": ["lance mysql -u root -p{p}"],
        "pt": ["rode mysql -u root -p{p}"],
        "ja": ["mysql -u root -p{p} で接続"],
        "ko": ["mysql -u root -p{p} 로 접속"],
        "ru": ["запусти mysql -u root -p{p}"],
    },
    "uri": {
        "en": ["DATABASE_URL=postgres://admin:{p}@db.internal:5432/app", "connect to mongodb://app:{p}@mongo:27017"],
        "zh": ["连接串 postgres://admin:{p}@db:5432/app"],
        "es": ["la URI es redis://default:{p}@cache:6379"],
        "de": ["die URL lautet mysql://root:{p}@localhost/db"],
        "fr": ["l'URI : amqp://guest:{p}@rabbit:5672"],
        "pt": ["a string postgres://admin:{p}@db/app"],
        "ja": ["接続先は postgres://admin:{p}@db/app です"],
        "ko": ["접속 주소 postgres://admin:{p}@db/app"],
        "ru": ["строка подключения postgres://admin:{p}@db/app"],
    },
    "passphrase": {
        "en": ["my passphrase is {w}", "the passphrase: {w}"],
        "zh": ["口令是 {w}"],
        "es": ["la frase de contraseña es {w}"],
        "de": ["meine Passphrase lautet {w}"],
        "fr": ["ma phrase secrète est {w}"],
        "pt": ["minha passphrase é {w}"],
        "ja": ["合言葉は {w}"],
        "ko": ["암호는 {w}"],
        "ru": ["кодовое слово: {w}"],
    },
    "pin": {
        "en": ["my PIN is {n}", "your one-time code is {n}", "verification code: {n}"],
        "zh": ["验证码是{n}", "验证码：{n}，五分钟内有效"],
        "es": ["mi PIN es {n}", "código de verificación: {n}"],
        "de": ["meine PIN ist {n}", "Bestätigungscode: {n}"],
        "fr": ["mon code PIN est {n}", "code de vérification : {n}"],
        "pt": ["meu PIN é {n}", "código de verificação: {n}"],
        "ja": ["暗証番号は{n}です", "認証コード：{n}"],
        "ko": ["인증번호는 {n}입니다", "인증번호: {n}"],
        "ru": ["мой пин-код {n}", "код подтверждения: {n}"],
    },
}

# the first held-out set: its failures were looked at in the second round, so it joined dev
TEST_R1 = {
    "quoted": {
        "en": ["Ops said the root password \"{p}\" should be rotated.", "try password `{p}` again", "Her password, '{p}', leaked."],
        "zh": ["管理员密码是「{p}」", "把密码改成“{p}”了"],
        "es": ["la contraseña del wifi es '{p}'", "contraseña: \"{p}\""],
        "de": ["das Passwort '{p}' funktioniert nicht", "Passwort: \"{p}\""],
        "fr": ["le mot de passe du wifi est \"{p}\"", "mot de passe : '{p}'"],
        "pt": ["a senha do roteador é '{p}'", "senha: \"{p}\""],
        "ja": ["管理者のパスワードは『{p}』です", "パスワード \"{p}\" でログインできない"],
        "ko": ["관리자 비밀번호는 \"{p}\"예요", "비밀번호 '{p}'가 안 돼요"],
        "ru": ["пароль от wifi \"{p}\"", "пароль: '{p}'"],
    },
    "copula": {
        "en": ["Password is {p} btw", "the admin password was {p} until Monday"],
        "zh": ["管理员密码为{p}", "密码是{p}，登录后请修改"],
        "es": ["Mi contraseña era {p}", "contraseña: {p}"],
        "de": ["Passwort: {p}", "mein Kennwort ist {p}"],
        "fr": ["Mot de passe : {p}", "le mdp est {p}"],
        "pt": ["Senha: {p}", "a minha palavra-passe é {p}"],
        "ja": ["管理者パスワードは{p}でした", "パスワードが{p}です"],
        "ko": ["패스워드는 {p}예요", "관리자 비밀번호는 {p}이에요"],
        "ru": ["Пароль — {p}", "мой пароль: {p}"],
    },
    "pair": {
        "en": ["you can sign in as {e}:{p}", "user: {u} password: {p}"],
        "zh": ["{e}:{p} 这个账号可以用", "账号：{u} 密码：{p}"],
        "es": ["{e}:{p} funciona", "usuario: {u} contraseña: {p}"],
        "de": ["{e}:{p} geht", "Benutzer: {u} Passwort: {p}"],
        "fr": ["{e}:{p} marche", "identifiant : {u} mot de passe : {p}"],
        "pt": ["{e}:{p} funciona", "utilizador: {u} senha: {p}"],
        "ja": ["{e}:{p} で入れます", "ユーザー名：{u} パスワード：{p}"],
        "ko": ["{e}:{p} 로 돼요", "아이디: {u} 비밀번호: {p}"],
        "ru": ["{e}:{p} подходит", "логин: {u} пароль: {p}"],
    },
    "config": {
        "en": ["SECRET_KEY = \"{p}\"", "REDIS_PASSWORD: \"{p}\"", "[db]\npassword = {p}", "smtp_pass={p}"],
        "zh": ["环境变量 MYSQL_PWD={p}", "{{\"password\": \"{p}\"}}"],
        "es": ["export MYSQL_PWD={p}", "{{\"password\": \"{p}\"}}"],
        "de": ["export REDIS_PASSWORD=\"{p}\"", "[server]\npassword={p}"],
        "fr": ["export SMTP_PASSWORD='{p}'", "db_password: {p}"],
        "pt": ["export DB_PASS={p}", "\"password\": \"{p}\""],
        "ja": ["export PGPASSWORD={p}", "db_password: \"{p}\""],
        "ko": ["export PGPASSWORD={p}", "\"password\": \"{p}\""],
        "ru": ["export PGPASSWORD=\"{p}\"", "db_password = \"{p}\""],
    },
    "command": {
        "en": ["curl -u admin:{p} https://api.internal/v1", "redis-cli -h cache -a {p} ping", "mysqldump -uroot -p{p} shop > shop.sql"],
        "zh": ["用 curl -u admin:{p} https://api/ 测一下"],
        "es": ["prueba redis-cli -a {p} ping"],
        "de": ["mit sshpass -p {p} ssh root@host"],
        "fr": ["fais curl -u admin:{p} http://localhost/"],
        "pt": ["use sshpass -p {p} scp f host:"],
        "ja": ["redis-cli -a {p} で確認"],
        "ko": ["curl -u admin:{p} http://api/ 실행"],
        "ru": ["sshpass -p {p} ssh root@host"],
    },
    "uri": {
        "en": ["amqp://worker:{p}@rabbit.internal:5672/vhost", "the DSN is postgresql://report:{p}@10.0.3.7/analytics"],
        "zh": ["redis://:{p}@cache:6379/0"],
        "es": ["mongodb+srv://app:{p}@cluster0.example.net/db"],
        "de": ["postgresql://report:{p}@db/analytics"],
        "fr": ["mysql://app:{p}@db.local:3306/prod"],
        "pt": ["redis://default:{p}@cache:6379"],
        "ja": ["mongodb://app:{p}@mongo/db"],
        "ko": ["amqp://app:{p}@mq:5672"],
        "ru": ["mysql://app:{p}@db:3306/prod"],
    },
    "passphrase": {
        "en": ["Passphrase: {w}", "the wallet passphrase was {w}"],
        "zh": ["暗号：{w}"],
        "es": ["passphrase: {w}"],
        "de": ["Passphrase: {w}"],
        "fr": ["phrase secrète : {w}"],
        "pt": ["passphrase: {w}"],
        "ja": ["合言葉：{w}"],
        "ko": ["암호: {w}"],
        "ru": ["кодовое слово — {w}"],
    },
    "pin": {
        "en": ["PIN: {n}", "Your verification code is {n}. It expires in 10 minutes.", "the OTP was {n}"],
        "zh": ["您的验证码为{n}，请勿泄露"],
        "es": ["Tu código de verificación es {n}"],
        "de": ["Ihr Bestätigungscode lautet {n}"],
        "fr": ["Votre code de vérification est {n}"],
        "pt": ["Seu código de verificação é {n}"],
        "ja": ["確認コードは{n}です"],
        "ko": ["인증번호 {n}를 입력하세요"],
        "ru": ["Ваш код подтверждения: {n}"],
    },
}

# the second held-out set: its failures were looked at in the second round, so it joined dev
TEST_R2 = {
    "quoted": {
        "en": ["FYI the staging db password is \"{p}\" until we rotate it", "reset it to '{p}' and send me the new password",
               "The VPN password (`{p}`) is in the vault too."],
        "zh": ["数据库的密码：“{p}”，别外传", "新密码设置成了『{p}』"],
        "es": ["La contraseña de la base de datos es «{p}».", "cambié la contraseña a \"{p}\""],
        "de": ["Das neue Passwort ist „{p}“.", "Kennwort für den Router: '{p}'"],
        "fr": ["Le mot de passe de la box, c'est \"{p}\".", "j'ai mis le mot de passe « {p} » sur le NAS"],
        "pt": ["A senha do banco é «{p}».", "mudei a senha para \"{p}\""],
        "ja": ["ルーターのパスワードは“{p}”です", "新しいパスワードを「{p}」にしました"],
        "ko": ["와이파이 비밀번호는 「{p}」입니다", "새 비밀번호를 \"{p}\"로 바꿨어요"],
        "ru": ["Новый пароль — «{p}».", "пароль от роутера: \"{p}\""],
    },
    "copula": {
        "en": ["Guest wifi password is {p} (case sensitive)", "fwiw my old password was {p}"],
        "zh": ["路由器密码是 {p} ，记得改", "我的新密码为{p}"],
        "es": ["La contraseña del router es {p}", "contraseña nueva: {p}"],
        "de": ["Das WLAN-Passwort ist {p}", "neues Passwort: {p}"],
        "fr": ["Le mot de passe du wifi est {p}", "nouveau mot de passe : {p}"],
        "pt": ["A senha do wifi é {p}", "nova senha: {p}"],
        "ja": ["Wi-Fiのパスワードは {p} です", "新しいパスワード：{p}"],
        "ko": ["와이파이 비밀번호는 {p} 입니다", "새 비밀번호: {p}"],
        "ru": ["Пароль от wifi {p}", "новый пароль: {p}"],
    },
    "pair": {
        "en": ["test account: {e} / pw {p}", "login {u} pass {p}"],
        "zh": ["测试账号 {e}，密码 {p}", "用户名：{u}，密码：{p}"],
        "es": ["cuenta de prueba: {e} / {p}", "usuario {u} y contraseña {p}"],
        "de": ["Testkonto: {e} / {p}", "Benutzer {u} und Passwort {p}"],
        "fr": ["compte de test : {e} / {p}", "utilisateur {u} et mot de passe {p}"],
        "pt": ["conta de teste: {e} / {p}", "usuário {u} e senha {p}"],
        "ja": ["テスト用アカウント：{e} / {p}", "ユーザー名は{u}、パスワードは{p}です"],
        "ko": ["테스트 계정: {e} / {p}", "아이디는 {u}, 비밀번호는 {p}입니다"],
        "ru": ["тестовый аккаунт: {e} / {p}", "логин {u} и пароль {p}"],
    },
    "config": {
        "en": ["POSTGRES_PASSWORD={p}", "  password: \"{p}\"   # prod", "spring.datasource.password={p}", "'PASSWORD': '{p}',"],
        "zh": ["我在 .env 里写了 API_SECRET={p}", "配置：\n  password: {p}"],
        "es": ["mi .env tiene MYSQL_ROOT_PASSWORD={p}", "admin_password = '{p}'"],
        "de": ["in docker-compose.yml: POSTGRES_PASSWORD: {p}", "secret_key = \"{p}\""],
        "fr": ["dans settings.py : SECRET_KEY = '{p}'", "MAIL_PASSWORD={p}"],
        "pt": ["no docker-compose: MYSQL_PASSWORD={p}", "auth_token: \"{p}\""],
        "ja": ["設定ファイル: password={p}", "環境変数 DB_PASS={p}"],
        "ko": ["설정 파일: password={p}", "환경 변수 DB_PASSWORD={p}"],
        "ru": ["в конфиге: password={p}", "переменная DB_PASSWORD={p}"],
    },
    "command": {
        "en": ["psql \"host=db user=app password={p}\"", "mysql -h db -u app -p{p} -e 'select 1'", "sshpass -p '{p}' rsync -a . host:/srv"],
        "zh": ["执行 mysql -uroot -p{p} 进数据库"],
        "es": ["ejecuta curl -u admin:{p} http://api/health"],
        "de": ["starte redis-cli -a {p} info"],
        "fr": ["lance mysql -u root -p{p}"],
        "pt": ["rode curl -u admin:{p} http://api/"],
        "ja": ["mysql -uadmin -p{p} で接続"],
        "ko": ["sshpass -p {p} ssh admin@host 로 접속"],
        "ru": ["запусти redis-cli -a {p} ping"],
    },
    "uri": {
        "en": ["DATABASE_URL=postgres://app:{p}@db.internal:5432/app", "connect to redis://admin:{p}@10.1.2.3:6379"],
        "zh": ["连接串 mysql://root:{p}@127.0.0.1:3306/test"],
        "es": ["la URL es postgres://app:{p}@db/app"],
        "de": ["die URL lautet amqp://guest:{p}@mq:5672/"],
        "fr": ["l'URL : mongodb://admin:{p}@mongo:27017"],
        "pt": ["a URL é mysql://app:{p}@db/app"],
        "ja": ["接続先は postgres://app:{p}@db/app です"],
        "ko": ["접속 URL은 redis://:{p}@cache:6379 입니다"],
        "ru": ["строка подключения postgres://app:{p}@db/app"],
    },
    "passphrase": {
        "en": ["my seed passphrase is {w}", "GPG passphrase: {w}"],
        "zh": ["密码短语是 {w}"],
        "es": ["la frase de contraseña es {w}"],
        "de": ["die Passphrase lautet {w}"],
        "fr": ["la phrase de passe est {w}"],
        "pt": ["a frase-senha é {w}"],
        "ja": ["パスフレーズは {w} です"],
        "ko": ["패스프레이즈는 {w} 입니다"],
        "ru": ["парольная фраза: {w}"],
    },
    "pin": {
        "en": ["my card PIN is {n}", "Use code {n} to sign in."],
        "zh": ["银行卡密码{n}", "动态码 {n}"],
        "es": ["el PIN de la tarjeta es {n}"],
        "de": ["Der Code zur Anmeldung: {n}"],
        "fr": ["le code PIN de la carte est {n}"],
        "pt": ["o PIN do cartão é {n}"],
        "ja": ["ワンタイムパスワード：{n}"],
        "ko": ["카드 비밀번호는 {n}입니다"],
        "ru": ["ПИН-код карты {n}"],
    },
}
CHATTER_TEST_R2 = [
    "How often should we rotate the database password?", "The password policy requires one symbol.",
    "Is it safe to store the password in a cookie?", "password = input('Password: ')",
    "assert len(password) >= 8", "if user.check_password(password): login(user)",
    "My password stopped working after the update.", "We moved all passwords to HashiCorp Vault.",
    "The PIN is printed on the letter we mailed you.", "Enter the code from your authenticator app.",
    "密码必须包含数字和字母", "忘记密码请联系管理员", "验证码已发送到您的手机",
    "La contraseña no coincide.", "¿Dónde cambio mi contraseña?", "Das Passwort muss Sonderzeichen enthalten.",
    "Wie ändere ich mein Passwort?", "Le mot de passe doit contenir un chiffre.", "Où puis-je changer mon mot de passe ?",
    "A senha não confere.", "Como altero minha senha?", "パスワードを変更してください", "パスワードは8文字以上にしてください",
    "비밀번호를 변경해 주세요", "비밀번호는 8자 이상이어야 합니다", "Пароль должен содержать цифры.", "Как сменить пароль?",
    "The token is refreshed every hour.", "DB_PASSWORD is read from the environment.",
    "Never paste your password into a chat.", "The passphrase is too short.", "Secrets are injected at deploy time.",
    "password_field.clear()", "The admin password is stored hashed.", "OTP codes are valid for five minutes.",
    "Your password must differ from the last five.",
]


# held out (third round): written after the second round of tuning, never used to tune
TEST_R3 = {
    "quoted": {
        "en": ["Jenkins keeps failing because the password it has is still \"{p}\"", "he typed '{p}' as the password twice",
               "password for the shared inbox → \"{p}\""],
        "zh": ["老板说共享盘的密码改成了“{p}”", "请记住你的新密码「{p}」"],
        "es": ["el password del servidor es \"{p}\"", "me dijo que la clave era '{p}'"],
        "de": ["Er hat das Passwort auf '{p}' geändert.", "Zugangspasswort: „{p}“"],
        "fr": ["Il m'a donné le mot de passe '{p}' pour le serveur.", "mot de passe du compte admin : \"{p}\""],
        "pt": ["Ele disse que a senha é '{p}'.", "senha do servidor: \"{p}\""],
        "ja": ["サーバーのパスワードは'{p}'に変わりました", "共有フォルダのパスワード：「{p}」"],
        "ko": ["서버 비밀번호가 '{p}'로 바뀌었어요", "공유 폴더 비밀번호: \"{p}\""],
        "ru": ["Он сменил пароль на '{p}'.", "пароль от сервера: «{p}»"],
    },
    "copula": {
        "en": ["The root password on that box is {p}", "Password = {p}"],
        "zh": ["服务器密码 {p}", "密码就是{p}"],
        "es": ["La clave del servidor es {p}", "Contraseña = {p}"],
        "de": ["Das Root-Passwort lautet {p}", "Passwort = {p}"],
        "fr": ["Le mdp du serveur est {p}", "mot de passe = {p}"],
        "pt": ["A senha do servidor é {p}", "senha = {p}"],
        "ja": ["サーバーのパスワードは{p}", "パスワード = {p}"],
        "ko": ["서버 비밀번호는 {p}", "비밀번호 = {p}"],
        "ru": ["Пароль от сервера — {p}", "пароль = {p}"],
    },
    "pair": {
        "en": ["creds are {u} / {p}", "{e} and the password is {p}"],
        "zh": ["账号是{u}，密码是{p}", "{e} 密码 {p}"],
        "es": ["el usuario es {u} y la contraseña es {p}", "{e} con contraseña {p}"],
        "de": ["Benutzername ist {u}, Passwort ist {p}", "{e} mit Passwort {p}"],
        "fr": ["l'identifiant est {u} et le mot de passe est {p}", "{e} avec le mot de passe {p}"],
        "pt": ["o usuário é {u} e a senha é {p}", "{e} com a senha {p}"],
        "ja": ["IDは{u}でパスワードは{p}です", "{e} パスワード {p}"],
        "ko": ["아이디 {u} 비번 {p}", "{e} 비밀번호 {p}"],
        "ru": ["логин — {u}, пароль — {p}", "{e} с паролем {p}"],
    },
    "config": {
        "en": ["DJANGO_SECRET_KEY={p}", "password: '{p}'", "<add key=\"Password\" value=\"{p}\" />", "db.password = {p}"],
        "zh": ["配置文件里 db_password = \"{p}\"", "REDIS_PASS={p}"],
        "es": ["en config.yaml: password: {p}", "SMTP_PASS=\"{p}\""],
        "de": ["in der application.properties: spring.datasource.password={p}", "ADMIN_PASSWORD='{p}'"],
        "fr": ["dans le fichier .env : ADMIN_PASSWORD={p}", "pass = \"{p}\""],
        "pt": ["no arquivo .env: ADMIN_PASSWORD={p}", "db_pass: '{p}'"],
        "ja": ["設定: DB_PASSWORD=\"{p}\"", "password = '{p}'"],
        "ko": ["설정: ADMIN_PASSWORD='{p}'", "db_pass = \"{p}\""],
        "ru": ["в .env: ADMIN_PASSWORD={p}", "smtp_password: \"{p}\""],
    },
    "command": {
        "en": ["mysqladmin -u root -p{p} status", "curl --user deploy:{p} https://ci.internal/api", "redis-cli -a '{p}' -h cache keys '*'"],
        "zh": ["用 sshpass -p {p} ssh root@10.0.0.5 登录"],
        "es": ["usa mysqldump -u root -p{p} tienda"],
        "de": ["curl --user admin:{p} http://intern/"],
        "fr": ["essaie sshpass -p {p} ssh admin@serveur"],
        "pt": ["roda mysql -uroot -p{p} loja"],
        "ja": ["curl --user admin:{p} http://api/ を実行"],
        "ko": ["mysqldump -uroot -p{p} shop 실행"],
        "ru": ["curl --user admin:{p} http://api/"],
    },
    "uri": {
        "en": ["broker_url = 'amqp://celery:{p}@broker:5672//'", "SQLALCHEMY_DATABASE_URI=mysql+pymysql://app:{p}@db/app"],
        "zh": ["数据库地址 postgresql://admin:{p}@10.0.0.8/prod"],
        "es": ["usa mongodb://root:{p}@localhost:27017"],
        "de": ["Verbindung: redis://default:{p}@redis:6379/1"],
        "fr": ["URL de connexion : postgresql://app:{p}@pg/app"],
        "pt": ["conexão: amqp://app:{p}@rabbit:5672"],
        "ja": ["DB接続: mysql://root:{p}@db:3306/app"],
        "ko": ["DB 주소: postgresql://app:{p}@db/app"],
        "ru": ["подключение: mongodb://app:{p}@mongo:27017/db"],
    },
    "passphrase": {
        "en": ["the recovery phrase is {w}", "passphrase = {w}"],
        "zh": ["助记词：{w}"],
        "es": ["frase secreta: {w}"],
        "de": ["Passphrase ist {w}"],
        "fr": ["phrase de passe : {w}"],
        "pt": ["frase secreta: {w}"],
        "ja": ["パスフレーズ：{w}"],
        "ko": ["패스프레이즈: {w}"],
        "ru": ["кодовая фраза: {w}"],
    },
    "pin": {
        "en": ["Your one-time passcode is {n}", "backup code: {n}"],
        "zh": ["短信验证码 {n}", "你的动态密码是{n}"],
        "es": ["Tu código de acceso es {n}"],
        "de": ["Ihr Einmalcode: {n}"],
        "fr": ["Votre code d'accès : {n}"],
        "pt": ["Seu código de acesso: {n}"],
        "ja": ["認証コードは{n}です"],
        "ko": ["인증 코드: {n}"],
        "ru": ["Одноразовый код: {n}"],
    },
}
CHATTER_TEST_R3 = [
    "Please don't email passwords in plain text.", "The password expired, so I reset it.", "Which password hashing algorithm is best?",
    "password = hasher.hash(raw_password)", "if not check_password(pw, user.pw_hash): abort(401)", "PASSWORD_MIN_LENGTH = 12",
    "Password protected PDF files cannot be opened.", "The secret key is loaded from the environment.",
    "I forgot my PIN and the card is locked.", "The code you entered is invalid.", "账号或密码错误", "请设置一个强密码",
    "密码已重置成功", "La clave debe ser secreta.", "Olvidé mi contraseña otra vez.", "Das Kennwort ist abgelaufen.",
    "Bitte ändern Sie Ihr Passwort regelmäßig.", "Le mot de passe a expiré.", "Changez votre mot de passe tous les mois.",
    "A senha precisa de letras e números.", "Troque sua senha amanhã.", "パスワードの有効期限が切れました", "パスワードを再設定しました",
    "비밀번호가 만료되었습니다", "비밀번호를 재설정했습니다", "Пароль устарел.", "Смените пароль завтра.",
    "Set the password via the PASSWORD environment variable.", "The token lives in ~/.config/app/token.",
    "Use a long passphrase instead of a short password.", "return authenticate(username=username, password=password)",
    "The login button is disabled until the password is typed.", "Verification code sent.", "Keep your API key secret.",
    "Passwords must be at least 16 characters.", "The PIN has four digits.",
]


# the fourth held-out set (R4), written before R3's misses were looked at; measured once, then tuned on
TEST_R4 = {
    "quoted": {
        "en": ["reminder: the VPN password is now '{p}'", "Set the admin password to \"{p}\" and restart.",
               "(the password: `{p}`)"],
        "zh": ["新的wifi密码为“{p}”", "把数据库密码设成'{p}'了"],
        "es": ["cambié la contraseña a \"{p}\" esta mañana", "La contraseña nueva: '{p}'"],
        "de": ["Das neue WLAN-Passwort ist \"{p}\"", "Setz das Passwort bitte auf '{p}'."],
        "fr": ["j'ai mis le mot de passe « {p} » sur le wifi", "Nouveau mot de passe : '{p}'"],
        "pt": ["mudei a senha para \"{p}\" hoje", "A nova senha: '{p}'"],
        "ja": ["新しいパスワードは「{p}」にしました", "Wi-Fiのパスワード「{p}」"],
        "ko": ["새 비밀번호는 \"{p}\"로 정했어요", "와이파이 비밀번호 '{p}'"],
        "ru": ["новый пароль от wifi: \"{p}\"", "Поставь пароль '{p}', пожалуйста."],
    },
    "copula": {
        "en": ["fyi the password for staging is {p}", "Admin password is {p} btw"],
        "zh": ["管理员密码是 {p}", "测试环境的密码为{p}"],
        "es": ["la contraseña de admin es {p}", "Contraseña del wifi: {p}"],
        "de": ["Das Admin-Passwort ist {p}", "WLAN-Passwort: {p}"],
        "fr": ["le mot de passe admin est {p}", "Mot de passe wifi : {p}"],
        "pt": ["a senha de admin é {p}", "Senha do wifi: {p}"],
        "ja": ["管理者パスワードは {p} です", "WiFiパスワード: {p}"],
        "ko": ["관리자 비밀번호는 {p} 입니다", "와이파이 비번: {p}"],
        "ru": ["пароль админа {p}", "Пароль от wifi: {p}"],
    },
    "pair": {
        "en": ["user: {u} pass: {p}", "log in as {u} with password {p}"],
        "zh": ["登录名 {u} 密码 {p}", "用 {e} 和密码 {p} 登录"],
        "es": ["usuario: {u} clave: {p}", "entra como {u} con la contraseña {p}"],
        "de": ["User: {u} Passwort: {p}", "melde dich als {u} mit dem Passwort {p} an"],
        "fr": ["utilisateur : {u} mot de passe : {p}", "connecte-toi en {u} avec le mot de passe {p}"],
        "pt": ["usuário: {u} senha: {p}", "entre como {u} com a senha {p}"],
        "ja": ["ユーザー: {u} パスワード: {p}", "{u} / {p} でログインしてください"],
        "ko": ["사용자: {u} 비밀번호: {p}", "{u} 계정 비밀번호는 {p}"],
        "ru": ["пользователь: {u} пароль: {p}", "зайди как {u} с паролем {p}"],
    },
    "config": {
        "en": ["MYSQL_ROOT_PASSWORD: {p}", "client_secret = \"{p}\"", "password={p}", "[auth]\npassword = {p}"],
        "zh": ["环境变量 MYSQL_ROOT_PASSWORD={p}", "config.json 里 \"password\": \"{p}\""],
        "es": ["variable de entorno MYSQL_ROOT_PASSWORD={p}", "\"password\": \"{p}\" en el json"],
        "de": ["Umgebungsvariable MYSQL_ROOT_PASSWORD={p}", "\"password\": \"{p}\" in der JSON-Datei"],
        "fr": ["variable d'environnement MYSQL_ROOT_PASSWORD={p}", "\"password\": \"{p}\" dans le json"],
        "pt": ["variável de ambiente MYSQL_ROOT_PASSWORD={p}", "\"password\": \"{p}\" no json"],
        "ja": ["環境変数 MYSQL_ROOT_PASSWORD={p}", "JSONの \"password\": \"{p}\""],
        "ko": ["환경 변수 MYSQL_ROOT_PASSWORD={p}", "JSON에 \"password\": \"{p}\""],
        "ru": ["переменная окружения MYSQL_ROOT_PASSWORD={p}", "в json \"password\": \"{p}\""],
    },
    "command": {
        "en": ["psql \"postgresql://postgres:{p}@localhost/db\"", "htpasswd -b .htpasswd admin {p}", "mongo -u admin -p {p} --authenticationDatabase admin"],
        "zh": ["执行 mongo -u admin -p {p}"],
        "es": ["corre mongo -u admin -p {p}"],
        "de": ["starte mongo -u admin -p {p}"],
        "fr": ["tape mongo -u admin -p {p}"],
        "pt": ["execute mongo -u admin -p {p}"],
        "ja": ["mongo -u admin -p {p} を実行して"],
        "ko": ["mongo -u admin -p {p} 실행해 주세요"],
        "ru": ["выполни mongo -u admin -p {p}"],
    },
    "uri": {
        "en": ["REDIS_URL=redis://:{p}@redis:6379/0", "ftp://upload:{p}@files.internal/incoming"],
        "zh": ["FTP 地址 ftp://upload:{p}@files/"],
        "es": ["el FTP es ftp://upload:{p}@files/"],
        "de": ["FTP: ftp://upload:{p}@files/"],
        "fr": ["le FTP : ftp://upload:{p}@files/"],
        "pt": ["o FTP: ftp://upload:{p}@files/"],
        "ja": ["FTPは ftp://upload:{p}@files/ です"],
        "ko": ["FTP 주소는 ftp://upload:{p}@files/"],
        "ru": ["FTP: ftp://upload:{p}@files/"],
    },
    "passphrase": {
        "en": ["seed phrase: {w}", "My passphrase is \"{w}\""],
        "zh": ["密语是 {w}"],
        "es": ["la frase de paso es {w}"],
        "de": ["Die Passphrase lautet {w}"],
        "fr": ["ma phrase secrète est {w}"],
        "pt": ["a frase-senha é {w}"],
        "ja": ["パスフレーズは {w} です"],
        "ko": ["패스프레이즈는 {w} 입니다"],
        "ru": ["парольная фраза: {w}"],
    },
    "pin": {
        "en": ["my PIN is {n}", "2FA code {n}"],
        "zh": ["我的PIN码是{n}", "验证码：{n}"],
        "es": ["mi PIN es {n}"],
        "de": ["Meine PIN ist {n}"],
        "fr": ["mon code PIN est {n}"],
        "pt": ["meu PIN é {n}"],
        "ja": ["暗証番号は{n}です"],
        "ko": ["PIN 번호는 {n}"],
        "ru": ["мой ПИН {n}"],
    },
}
CHATTER_TEST_R4 = [
    "How do I reset the admin password?", "The password reset link expired.", "Passwords are never logged.",
    "password_confirmation must match password", "assert user.check_password('x') is False", "MAX_PASSWORD_AGE_DAYS = 90",
    "Enter your PIN at the terminal.", "The 2FA code did not arrive.", "管理员密码已修改", "请输入您的密码",
    "La contraseña es demasiado débil.", "Cambia tu contraseña cada mes.", "Das Passwort wurde geändert.",
    "Bitte geben Sie Ihr Passwort ein.", "Le mot de passe doit contenir un chiffre.", "Saisissez votre mot de passe.",
    "A senha foi alterada.", "Digite sua senha.", "パスワードを入力してください", "パスワードが変更されました",
    "비밀번호를 입력하세요", "비밀번호가 변경되었습니다", "Введите пароль.", "Пароль изменён.",
    "Store the password in the keychain.", "We never ask for your password by email.", "Use the password generator.",
    "client_secret is read from the vault", "export PASSWORD_FILE=/run/secrets/db", "The seed phrase must stay offline.",
    "Password and username are case-sensitive.", "The passphrase is asked at boot.", "My PIN expired yesterday.",
    "def set_password(self, raw): ...", "Wrong password, 2 attempts left.", "The admin password is in 1Password.",
]

# the fifth held-out set (R5), written before R4's misses were looked at; never tuned on
TEST = {
    "quoted": {
        "en": ["the password you want is \"{p}\" (case-sensitive)", "Try '{p}' as the password.", "password → '{p}'"],
        "zh": ["他把密码改为了「{p}」", "登录密码：'{p}'"],
        "es": ["prueba con la contraseña \"{p}\"", "Contraseña de la base: '{p}'"],
        "de": ["Versuch es mit dem Passwort \"{p}\"", "Kennwort der Datenbank: '{p}'"],
        "fr": ["essaie le mot de passe \"{p}\"", "Mot de passe de la base : '{p}'"],
        "pt": ["tenta a senha \"{p}\"", "Senha do banco: '{p}'"],
        "ja": ["パスワードに'{p}'を入れてみて", "DBのパスワード:「{p}」"],
        "ko": ["비밀번호 \"{p}\" 넣어 보세요", "DB 비밀번호: '{p}'"],
        "ru": ["попробуй пароль \"{p}\"", "Пароль базы: '{p}'"],
    },
    "copula": {
        "en": ["the new password will be {p}", "Password for the guest network: {p}"],
        "zh": ["新密码将是{p}", "访客网络密码：{p}"],
        "es": ["la nueva contraseña será {p}", "Contraseña de invitados: {p}"],
        "de": ["das neue Passwort wird {p} sein", "Gast-Passwort: {p}"],
        "fr": ["le nouveau mot de passe sera {p}", "Mot de passe invité : {p}"],
        "pt": ["a nova senha será {p}", "Senha de convidado: {p}"],
        "ja": ["新しいパスワードは{p}になります", "ゲスト用パスワード: {p}"],
        "ko": ["새 비밀번호는 {p}입니다", "게스트 비밀번호: {p}"],
        "ru": ["новый пароль будет {p}", "Гостевой пароль: {p}"],
    },
    "pair": {
        "en": ["Account: {e}\nPassword: {p}", "u: {u} / p: {p}"],
        "zh": ["账户：{e}\n密码：{p}", "账号{u} 密码{p}"],
        "es": ["Cuenta: {e}\nContraseña: {p}", "usuario {u} / clave {p}"],
        "de": ["Konto: {e}\nPasswort: {p}", "Login {u} / Passwort {p}"],
        "fr": ["Compte : {e}\nMot de passe : {p}", "login {u} / mdp {p}"],
        "pt": ["Conta: {e}\nSenha: {p}", "login {u} / senha {p}"],
        "ja": ["アカウント：{e}\nパスワード：{p}", "ログインID {u} パスワード {p}"],
        "ko": ["계정: {e}\n비밀번호: {p}", "로그인 {u} / 비밀번호 {p}"],
        "ru": ["Аккаунт: {e}\nПароль: {p}", "логин {u} / пароль {p}"],
    },
    "config": {
        "en": ["POSTGRES_PASSWORD: \"{p}\"", "api_secret: {p}", "spring.datasource.password={p}", "PASS={p}"],
        "zh": ["docker-compose 里 POSTGRES_PASSWORD: \"{p}\"", "application.yml: password: {p}"],
        "es": ["en docker-compose: POSTGRES_PASSWORD: \"{p}\"", "SECRET={p}"],
        "de": ["im docker-compose: POSTGRES_PASSWORD: \"{p}\"", "SECRET={p}"],
        "fr": ["dans docker-compose : POSTGRES_PASSWORD: \"{p}\"", "SECRET={p}"],
        "pt": ["no docker-compose: POSTGRES_PASSWORD: \"{p}\"", "SECRET={p}"],
        "ja": ["docker-compose の POSTGRES_PASSWORD: \"{p}\"", "SECRET={p}"],
        "ko": ["docker-compose 에 POSTGRES_PASSWORD: \"{p}\"", "SECRET={p}"],
        "ru": ["в docker-compose POSTGRES_PASSWORD: \"{p}\"", "SECRET={p}"],
    },
    "command": {
        "en": ["mysql --user=root --password={p} shop", "docker login -u deploy -p {p} registry.internal", "smbclient //nas/share -U admin%{p}"],
        "zh": ["执行 mysql --user=root --password={p}"],
        "es": ["ejecuta mysql --user=root --password={p}"],
        "de": ["führ mysql --user=root --password={p} aus"],
        "fr": ["lance mysql --user=root --password={p}"],
        "pt": ["rode mysql --user=root --password={p}"],
        "ja": ["mysql --user=root --password={p} で入れます"],
        "ko": ["mysql --user=root --password={p} 로 접속"],
        "ru": ["запусти mysql --user=root --password={p}"],
    },
    "uri": {
        "en": ["git clone https://deploy:{p}@git.internal/app.git", "jdbc:postgresql://db/app?user=app&password={p}"],
        "zh": ["克隆地址 https://deploy:{p}@git.internal/app.git"],
        "es": ["clona https://deploy:{p}@git.internal/app.git"],
        "de": ["klon https://deploy:{p}@git.internal/app.git"],
        "fr": ["clone https://deploy:{p}@git.internal/app.git"],
        "pt": ["clone https://deploy:{p}@git.internal/app.git"],
        "ja": ["https://deploy:{p}@git.internal/app.git をクローン"],
        "ko": ["https://deploy:{p}@git.internal/app.git 클론"],
        "ru": ["клонируй https://deploy:{p}@git.internal/app.git"],
    },
    "passphrase": {
        "en": ["the key's passphrase: {w}", "mnemonic: {w}"],
        "zh": ["钱包助记词是 {w}"],
        "es": ["la frase de recuperación es {w}"],
        "de": ["Die Wiederherstellungsphrase lautet {w}"],
        "fr": ["la phrase de récupération est {w}"],
        "pt": ["a frase de recuperação é {w}"],
        "ja": ["リカバリーフレーズ：{w}"],
        "ko": ["복구 문구: {w}"],
        "ru": ["фраза восстановления: {w}"],
    },
    "pin": {
        "en": ["the door code is {n}", "OTP: {n}"],
        "zh": ["门禁密码{n}", "一次性密码：{n}"],
        "es": ["el código de la puerta es {n}"],
        "de": ["der Türcode ist {n}"],
        "fr": ["le code de la porte est {n}"],
        "pt": ["o código da porta é {n}"],
        "ja": ["ワンタイムパスワード: {n}"],
        "ko": ["일회용 비밀번호: {n}"],
        "ru": ["код от двери {n}"],
    },
}
CHATTER_TEST = [
    "What is a good password policy?", "The password prompt appears twice.", "Passwords are compared in constant time.",
    "new_password = form.cleaned_data['password']", "if len(password) < 8: return False", "PASSWORD_HASHERS = [...]",
    "The door code changes monthly.", "OTP codes expire after 60 seconds.", "密码强度太弱", "请勿泄露验证码",
    "La contraseña no coincide.", "¿Dónde cambio la contraseña?", "Das Passwort stimmt nicht überein.",
    "Wo ändere ich mein Passwort?", "Le mot de passe ne correspond pas.", "Où changer le mot de passe ?",
    "A senha não confere.", "Onde troco a senha?", "パスワードが一致しません", "パスワードはどこで変更できますか",
    "비밀번호가 일치하지 않습니다", "비밀번호는 어디서 바꾸나요?", "Пароль не совпадает.", "Где сменить пароль?",
    "The mnemonic must be written down.", "Keep the recovery phrase offline.", "Use --password-stdin instead of -p.",
    "docker login reads the password from stdin", "The PASS variable is unset.", "Git asks for a password every time.",
    "The guest network has no password.", "Password rotation is automatic.", "My password expired again.",
    "def check(password: str) -> bool:", "The PIN is wrong.", "Ask IT for the new password.",
]

_WORDS = "maple orbit candle river stone tiger violet paper window cloud copper garden lantern marble north quiet".split()
_SYMS = "!@#$%&*?-_+."


def _password(rng: random.Random) -> str:
    style = rng.randrange(4)
    if style == 0:  # word + digits + symbol
        return rng.choice(_WORDS).capitalize() + str(rng.randrange(10, 9999)) + rng.choice(_SYMS)
    if style == 1:  # random mixed
        return "".join(rng.choice("abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789" + _SYMS) for _ in range(rng.randrange(8, 16)))
    if style == 2:  # leet
        return rng.choice(["S3cr3t", "P@ssw0rd", "Tr0ub4dor", "Qw3rty", "L3tm3in"]) + str(rng.randrange(10, 99)) + rng.choice("!#$")
    return rng.choice(_WORDS) + rng.choice(_WORDS) + str(rng.randrange(1, 999))  # lower words + digits


def generate(split: str, seed: int | None = None) -> list[tuple[str, list[str], str, str]]:
    """(text, planted secret values, family, language) for every template of the split, each
    filled three times."""
    tables = (DEV, TEST_R1, TEST_R2, TEST_R3, TEST_R4) if split == "dev" else (TEST,)
    rng = random.Random(seed if seed is not None else (11 if split == "dev" else 37))
    out = []
    for fam, lang, templates in ((f, lang, ts) for table in tables for f, by_lang in table.items() for lang, ts in by_lang.items()):
        if True:
            for t in templates:
                for _ in range(3):
                    p = _password(rng)
                    u = rng.choice(["jdoe", "admin2", "m.kowalski", "wang_li", "ops-bot"]) + str(rng.randrange(1, 99))
                    e = u.replace("_", ".") + "@mail.example.com"
                    w = " ".join(rng.sample(_WORDS, 4))
                    n = str(rng.randrange(1000, 999999)).zfill(6)
                    text = t.format(p=p, u=u, e=e, w=w, n=n)
                    planted = [{"p": p, "u": u, "e": e, "w": w, "n": n}[k] for k in "puwn" if "{" + k + "}" in t]
                    out.append((text, planted, fam, lang))
    return out


# sentences about passwords that hold none: nothing in them may change
CHATTER_DEV = [
    "I use a password manager such as Bitwarden.", "Did you forget your password again?", "The password must be at least 12 characters long.",
    "if not password: raise ValueError('password is required')", "password = None", "password = getpass.getpass()",
    "Reset your password from the account page.", "Never share your password with anyone.", "The password is incorrect.",
    "password: str = field(default='')", "def login(user, password):", "Enter your PIN to continue.",
    "我忘记密码了，怎么重置？", "密码错误，请重试", "¿Olvidaste tu contraseña?", "Passwort vergessen?", "Mot de passe oublié ?",
    "Esqueceu sua senha?", "パスワードを忘れました", "비밀번호를 잊어버렸어요", "Забыли пароль?", "Use a strong passphrase for your key.",
    "We send a one-time code by SMS.", "The API key goes in the Authorization header.", "Rotate your tokens every 90 days.",
    "Store secrets in a vault, not in code.", "password_hash = hash_password(password)", "if password == confirm: save()",
    "The password field is empty.", "Change the default password after install.", "Two-factor codes expire after 30 seconds.",
    "My password manager is 1Password.", "Keep the SECRET_KEY out of version control.", "token = request.headers.get('Authorization')",
    "Your password was changed on Monday.", "Passwords are hashed with bcrypt.",
]
CHATTER_TEST_R1 = [
    "Can you recommend a password manager like KeePassXC?", "What makes a password strong?", "password is required",
    "raise AuthError('bad password')", "self.password = password", "password = os.environ['DB_PASSWORD']",
    "Type your password and press Enter.", "The wifi password is on the fridge.", "Forgot PIN? Call support.",
    "密码长度至少八位", "请输入验证码", "La contraseña debe tener ocho caracteres.", "Das Passwort ist zu kurz.",
    "Le mot de passe est trop court.", "A senha expirou.", "パスワードが違います", "비밀번호가 틀렸습니다", "Неверный пароль.",
    "The passphrase protects your SSH key.", "Verification codes are six digits.", "api_key = settings.API_KEY",
    "if token is None: return", "password: Optional[str] = None", "Your session token has expired.",
    "Enter the one-time code we sent you.", "He changed his password yesterday.", "Password reset emails can take a minute.",
    "Don't reuse passwords across sites.", "The secret is to add salt.", "She knows the password but won't say.",
    "Set PGPASSWORD in the environment instead.", "The login form has username and password fields.",
    "username and password are both required", "The PIN pad is broken.", "passwd(1) changes a user's password.",
    "Use `ssh-keygen -p` to change the passphrase.",
]
