// Runs SillyTavern's own speaker choice (public/scripts/group-chats.js: activateNaturalOrder,
// activateListOrder, activatePooledOrder, and manual's shuffle-and-take-one from
// generateGroupWrapper) on cases from tests/test_group_differential.py.
//
// SillyTavern's files are read at run time from the paths given (a SillyTavern checkout);
// nothing of them is kept in this project. The functions are cut out of the source text and
// run with SillyTavern's own helpers from public/scripts/utils.js (shuffle, extractAllWords,
// onlyUnique), with Math.random replaced by the list of numbers each case brings, so both
// sides draw the same "random" numbers in their own order.
//
//   node tests/group_oracle.mjs GROUP_CHATS_JS UTILS_JS CASES.json  ->  JSON results on stdout

import fs from 'node:fs';

const [groupChatsPath, utilsPath, casesPath] = process.argv.slice(2);
const groupSource = fs.readFileSync(groupChatsPath, 'utf8');
const utilsSource = fs.readFileSync(utilsPath, 'utf8');

function cut(source, name) {
    const start = source.search(new RegExp(`^(export )?function ${name}\\(`, 'm'));
    if (start < 0) throw new Error(`function ${name} not found`);
    const end = source.indexOf('\n}\n', start);
    return source.slice(start, end + 2).replace(/^export /, '');
}

const body = [
    cut(utilsSource, 'shuffle'),
    cut(utilsSource, 'extractAllWords'),
    cut(utilsSource, 'onlyUnique'),
    cut(groupSource, 'activateListOrder'),
    cut(groupSource, 'activatePooledOrder'),
    cut(groupSource, 'activateNaturalOrder'),
    'return { shuffle, activateListOrder, activatePooledOrder, activateNaturalOrder };',
].join('\n\n');

const cases = JSON.parse(fs.readFileSync(casesPath, 'utf8'));
const results = [];
for (const c of cases) {
    const characters = c.characters;
    const chat = c.chat;
    let draw = 0;
    const random = () => {
        if (draw >= c.randoms.length) throw new Error('out of random numbers');
        return c.randoms[draw++];
    };
    const mathWith = Object.create(Math);
    mathWith.random = random;
    const make = new Function('characters', 'chat', 'talkativeness_default',
        'system_message_types', 'Math', body);
    const st = make(characters, chat, 0.5, { NARRATOR: 'narrator' }, mathWith);
    const enabled = c.members.filter(x => !c.disabled.includes(x));
    const last = chat[chat.length - 1];
    const isUserInput = c.user_text.length > 0;
    let ids = [];
    if (c.strategy === 0) {
        const text = isUserInput ? c.user_text : (last && !last.is_system ? last.mes : '');
        ids = st.activateNaturalOrder(enabled, text, last, c.allow_self, isUserInput);
    } else if (c.strategy === 1) {
        ids = st.activateListOrder(enabled);
    } else if (c.strategy === 3) {
        ids = st.activatePooledOrder(enabled, last, isUserInput);
    } else if (c.strategy === 2 && !isUserInput) {
        ids = st.shuffle(enabled).slice(0, 1)
            .map(x => characters.findIndex(y => y.avatar === x)).filter(x => x !== -1);
    }
    results.push({ id: c.id, speakers: ids.map(i => characters[i].avatar), draws: draw });
}
process.stdout.write(JSON.stringify(results));
